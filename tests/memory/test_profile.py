"""The user's profile across chats, in both stores: filled by compaction's detection of durable
statements, superseded by newer statements of the same subject, carried in every chat's context."""

from __future__ import annotations

from datetime import timedelta

import pytest

from parla.daemon.memory_services import gemini_client
from parla.daemon.settings import Settings
from parla.kernel.models import DEFAULT_SUMMARY_MODEL
from parla.memory.compaction.compactor import Compactor
from parla.memory.context import load_context
from parla.memory.embedders.gemini import GeminiEmbedder
from parla.memory.language.profile_rules import subject_of
from parla.memory.summarizers.gemini import GeminiSummarizer
from parla.records.profile import ProfileEntry
from parla.records.turn import Turn
from tests.conftest import T0
from tests.memory.talk import talk

pytestmark = pytest.mark.tier("fast")

SMALL_TALK = [
    "The weather was lovely this morning, we had a walk in the park.",
    "That film last night was fun but a bit long.",
    "Thanks, that sounds good to me.",
]


async def test_a_new_chat_knows_what_was_said_in_other_chats(any_store, summarizer, embedder, config):
    compactor = Compactor(any_store, summarizer, embedder, config)
    trip = await talk(
        any_store,
        compactor,
        [SMALL_TALK[0], "I'm vegetarian.", "My daughter is called Sofia.", "The cabin wifi password is bluefinch77."],
        day=0,
    )
    await talk(any_store, compactor, [SMALL_TALK[1], SMALL_TALK[2]], day=1)
    dinner = (await any_store.create_chat(turns=[Turn.of("user", "Let's plan a dinner for Saturday.")])).chat

    context = await load_context(any_store, dinner.id, config)
    profile = "".join(item.line for item in context.sections["profile"])
    for fact in ("I'm vegetarian.", "My daughter is called Sofia.", "bluefinch77"):
        assert fact in profile
    assert all(talk not in profile for talk in SMALL_TALK)
    # each line says where it comes from; the section comes before the chat's own memory
    assert "(another chat, 2026-01-05)" in profile
    assert context.render().index("What you know about the user") < context.render().index("Recent conversation")
    entries = await any_store.list_profile()
    assert {e.chat_id for e in entries} == {trip}
    assert all(e.source_seq is not None and e.origin == "auto" for e in entries)

    # compacting again adds nothing (the same statement, the same entry)
    await compactor.compact(trip)
    assert len(await any_store.list_profile(history=True)) == len(entries)


async def test_a_newer_fact_supersedes_the_older_and_keeps_it_as_history(any_store, summarizer, embedder, config):
    compactor = Compactor(any_store, summarizer, embedder, config)
    turin = await talk(any_store, compactor, ["I live in Turin with two cats."], day=0)
    milan = await talk(any_store, compactor, ["Big news: I moved to Milan last week."], day=3)

    (current,) = [e for e in await any_store.list_profile() if e.subject == "home"]
    assert "Milan" in current.content and current.chat_id == milan
    history = [e for e in await any_store.list_profile(history=True) if e.subject == "home"]
    (older,) = [e for e in history if e.id != current.id]
    assert "Turin" in older.content and older.chat_id == turin and older.superseded_by == current.id

    # an older statement saved late (a chat compacted after) does not take the place of a newer one
    late = ProfileEntry(content="I live in Genoa.", subject="home", chat_id=turin, said_at=T0 - timedelta(days=30))
    (stored,) = await any_store.save_profile([late])
    assert stored.superseded_by == current.id

    fresh = (await any_store.create_chat(turns=[Turn.of("user", "Where should we eat tonight?")])).chat
    shown = (await load_context(any_store, fresh.id, config)).render()
    assert "Milan" in shown and "Turin" not in shown and "Genoa" not in shown


async def test_forgetting_and_editing_an_entry(any_store):
    (entry,) = await any_store.save_profile(
        [ProfileEntry(content="My favourite colour is green.", subject="favourite colour", origin="user")]
    )
    forgotten = await any_store.set_profile_forgotten(entry.id, True)
    assert forgotten.forgotten_at is not None and await any_store.list_profile() == []
    await any_store.set_profile_forgotten(entry.id, False)
    (edited,) = await any_store.save_profile(
        [entry.model_copy(update={"content": "My favourite colour is teal."})], edit=True
    )
    assert edited.content == "My favourite colour is teal."
    assert [e.content for e in await any_store.list_profile()] == ["My favourite colour is teal."]
    # without `edit`, an id already stored is left as it is
    assert await any_store.save_profile([entry]) == []


async def test_the_profile_keeps_to_its_budget_most_important_first(store, config):
    chat = (await store.create_chat(turns=[Turn.of("user", "Hello there.")])).chat
    entries = [
        ProfileEntry(content=f"Fact number {i} about the user, said with some detail.", importance=i % 10)
        for i in range(60)
    ]
    await store.save_profile(entries)
    small = config.model_copy(update={"context_profile_budget": 60})
    context = await load_context(store, chat.id, small)
    shown = context.sections["profile"]
    assert 0 < len(shown) < 60 and sum(i.tokens for i in shown) <= 60
    assert [i.importance for i in shown] == sorted((i.importance for i in shown), reverse=True)
    assert shown[0].importance == 9
    assert any(d.section == "profile" and d.reason == "over the profile budget" for d in context.dropped)


def test_subjects_read_from_what_was_said():
    assert subject_of("I live in Turin") == subject_of("I've moved to Milan") == "home"
    assert subject_of("My daughter's name is Sofia") == subject_of("my daughter is called Sofia") == "daughter name"
    assert subject_of("The cabin wi-fi password is bluefinch77") == "wifi password"
    assert subject_of("I'm allergic to peanuts") is None


async def test_the_gemini_path_fills_the_profile_too(store, config, gemini):
    """Summaries and embeddings by Gemini (the REST emulator): the statements of a short chat
    still reach the profile, and the next chat's context."""
    client = gemini_client(Settings(gemini_api_key=gemini.api_key, gemini_base_url=gemini.base_url))
    compactor = Compactor(store, GeminiSummarizer(client, DEFAULT_SUMMARY_MODEL), GeminiEmbedder(client), config)
    await talk(store, compactor, [SMALL_TALK[0], "My daughter is called Sofia."], day=0)
    fresh = (await store.create_chat(turns=[Turn.of("user", "Plan a birthday party.")])).chat
    assert "My daughter is called Sofia." in (await load_context(store, fresh.id, config)).render()
    assert gemini.calls(":generateContent")  # the chat was described and titled by the model


async def test_the_summary_model_says_which_statements_are_about_the_user_and_which_about_the_chat(
    store, config, gemini
):
    """With a Gemini key the compaction's pin detection is the summary model's (the REST
    emulator): a statement it marks as about the user joins the profile with the subject it named;
    one it marks as about this chat only stays a pin of the chat."""
    gemini.reply_to(
        "durable, important statements",
        "- [3] 8 | user | daughter school | The user's daughter Sofia goes to Maple Grove school.\n"
        "- [5] 6 | chat | - | The cabin is booked for three nights.\n",
        every=True,
    )
    gemini.reply_to("Each numbered statement below", "[1] yes", every=True)
    client = gemini_client(Settings(gemini_api_key=gemini.api_key, gemini_base_url=gemini.base_url))
    compactor = Compactor(store, GeminiSummarizer(client, DEFAULT_SUMMARY_MODEL), GeminiEmbedder(client), config)
    said = [SMALL_TALK[0], "Sofia likes her school, Maple Grove.", "Book the cabin for three nights.", *SMALL_TALK[1:]]
    trip = await talk(store, compactor, said, day=0)

    (entry,) = await store.list_profile()
    assert (entry.content, entry.subject, entry.source_seq, entry.chat_id) == (
        "The user's daughter Sofia goes to Maple Grove school.",
        "daughter school",
        3,
        trip,
    )
    pinned = {p.content for p in await store.list_pins(trip)}
    assert pinned == {entry.content, "The cabin is booked for three nights."}
    dinner = (await store.create_chat(turns=[Turn.of("user", "Let's plan a dinner.")])).chat
    shown = (await load_context(store, dinner.id, config)).render()
    assert "Maple Grove" in shown and "three nights" not in shown
    asked = [c for c in gemini.calls(":generateContent") if "durable" in str(c.body.get("systemInstruction"))]
    assert asked and "user or chat | subject" in str(asked[0].body["systemInstruction"])
