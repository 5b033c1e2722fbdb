"""What Parla learns about the user from what they say in passing, as a compaction reads it (the
offline reading, and the summary model's statements checked through the Gemini REST emulator),
and which older fact a newer one replaces."""

from __future__ import annotations

import pytest

from parla.daemon.memory_services import gemini_client
from parla.daemon.settings import Settings
from parla.kernel.models import DEFAULT_SUMMARY_MODEL
from parla.memory.compaction.compactor import Compactor
from parla.memory.context import load_context
from parla.memory.embedders.gemini import GeminiEmbedder
from parla.memory.summarizers.gemini import GeminiSummarizer
from parla.records.turn import Turn
from tests.memory.talk import talk

pytestmark = pytest.mark.tier("fast")


async def _profile_shown(store, config) -> str:
    fresh = (await store.create_chat(turns=[Turn.of("user", "What should I cook tonight?")])).chat
    return "".join(item.line + "\n" for item in (await load_context(store, fresh.id, config)).sections["profile"])


async def test_a_fact_said_inside_a_question_reaches_a_new_chat(store, summarizer, embedder, config):
    compactor = Compactor(store, summarizer, embedder, config)
    await talk(store, compactor, ["I'm seeing a new physio, I can't take ibuprofen, should I tell her?"], day=0)
    await talk(store, compactor, ["My cat is fourteen, is dry food still fine for her?"], day=1)
    await talk(
        store, compactor, ["I'm registering with a new GP. I'm allergic to penicillin, what should I tell them?"], day=2
    )
    shown = await _profile_shown(store, config)
    for fact in ("I can't take ibuprofen", "My cat is fourteen", "I'm allergic to penicillin"):
        assert fact in shown
    # the questions around them are not facts, and no entry carries one
    assert "?" not in shown and "tell" not in shown.casefold()
    (penicillin,) = [e for e in await store.list_profile() if "penicillin" in e.content]
    assert penicillin.importance == 9.5  # health


async def test_two_facts_of_one_topic_both_stay_a_contradiction_replaces(store, summarizer, embedder, config):
    compactor = Compactor(store, summarizer, embedder, config)
    await talk(store, compactor, ["I'm moving to Valencia for work."], day=0)
    await talk(store, compactor, ["We're moving flats on 15 March."], day=3)
    shown = await _profile_shown(store, config)
    assert "Valencia" in shown and "15 March" in shown

    # where the user lives holds one value: the newer place replaces the older
    await talk(store, compactor, ["I live in Turin with two cats."], day=5)
    await talk(store, compactor, ["Big news: I moved to Milan."], day=8)
    shown = await _profile_shown(store, config)
    assert "Milan" in shown and "Turin" not in shown
    assert "Valencia" in shown and "15 March" in shown  # plans, not where the user lives


async def test_a_fact_never_carries_the_sentence_said_after_it(store, summarizer, embedder, config):
    # transcribed speech often has no full stop between a statement and the next request
    compactor = Compactor(store, summarizer, embedder, config)
    await talk(store, compactor, ["the code for the side door is 5150 Tell me something about Jupiter"], day=0)
    (entry,) = await store.list_profile()
    assert entry.content == "The code for the side door is 5150"


async def test_the_summary_models_statements_enter_the_profile_only_when_confirmed_as_the_users(store, config, gemini):
    """With a key, what the summary model found about the user is asked once more, statement by
    statement, with the user's words it came from; only a confirmed one becomes an entry (each stays
    a pin of its chat)."""
    said = [
        "We had a long walk this morning.",
        "My neighbour Tom is a pilot, he flies to Oslo every week.",
        "My daughter Sofia started violin lessons on Mondays.",
        "It was lovely weather.",
        "Thanks for the chat.",
    ]
    gemini.reply_to(
        "durable, important statements",
        "- [3] 7 | user | - | The user's neighbour Tom is a pilot who flies to Oslo every week.\n"
        "- [5] 8 | user | daughter lessons | The user's daughter Sofia has violin lessons on Mondays.\n"
        "- [6] 6 | user | - | The assistant enjoys sunny weather.\n",
        every=True,
    )
    gemini.reply_to("Each numbered statement below", "[1] no\n[2] yes", every=True)
    client = gemini_client(Settings(gemini_api_key=gemini.api_key, gemini_base_url=gemini.base_url))
    compactor = Compactor(store, GeminiSummarizer(client, DEFAULT_SUMMARY_MODEL), GeminiEmbedder(client), config)
    chat = await talk(store, compactor, said, day=0)

    auto = [e.content for e in await store.list_profile() if e.content.startswith("The user's")]
    assert auto == ["The user's daughter Sofia has violin lessons on Mondays."]
    asked = [c for c in gemini.calls(":generateContent") if "Each numbered" in str(c.body.get("systemInstruction"))]
    (question,) = asked
    listed = question.body["contents"][0]["parts"][0]["text"]
    # the statements with the user's words they came from; the assistant's turn is never asked about
    assert "[1] The user's neighbour Tom" in listed and "the user said: My neighbour Tom is a pilot" in listed
    assert "[2] The user's daughter Sofia" in listed and "[3]" not in listed
    pinned = {p.content for p in await store.list_pins(chat)}
    assert "The user's neighbour Tom is a pilot who flies to Oslo every week." in pinned
