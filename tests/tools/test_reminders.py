"""The timer and reminder tools through the registry against a real store: times read in the
user's language and zone from the moment of the call, listing, cancelling by description, and
"take me there" through switch_chat."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from parla.kernel.local_time import LocalClock
from parla.memory.retrieval.search import ChatSearch
from parla.tools.chats import ChatTools
from parla.tools.registry import ToolRegistry
from parla.tools.reminders import ReminderTools
from tests.tools.test_chats import Session

pytestmark = pytest.mark.tier("fast")


# Thursday 26 November 2026, 14:03 in Rome (13:03 UTC)
NOW = datetime(2026, 11, 26, 13, 3, tzinfo=UTC)


async def registry(store, embedder, config, languages=("en",)):
    chat = (await store.create_chat(title="Family")).chat
    await store.create_chat(title="Elsewhere")
    session = Session(chat.id)
    clock = LocalClock("Europe/Rome", lambda: NOW)
    chat_tools = ChatTools(store, ChatSearch(store, embedder, config), embedder, session, config)
    changes: list[int] = []
    tools = ReminderTools(
        store,
        session,
        chat_tools.switch_chat,
        clock,
        languages,
        "laptop",
        config.reminder_max_chars,
        lambda: changes.append(1),
    )
    return ToolRegistry(tools.tools()), session, chat, changes


async def test_a_timer_and_reminders_in_english_and_italian(store, embedder, config):
    tools, _, chat, changes = await registry(store, embedder, config, ("it",))
    timer = await tools.call("set_timer", {"duration": "10 minutes", "label": "pasta"})
    assert (timer["result"], timer["kind"], timer["text"], timer["due"]) == ("set", "timer", "pasta", "today at 14:13")
    sister = await tools.call("set_reminder", {"text": "chiamare mia sorella", "when": "alle 17:00"})
    assert sister["due"] == "today at 17:00"
    dentist = await tools.call("set_reminder", {"text": "the dentist", "when": "tomorrow at 09:00"})
    assert dentist["due"] == "tomorrow at 09:00"
    stored = await store.list_reminders()
    assert [(r.text, r.due_at) for r in stored] == [
        ("pasta", NOW + timedelta(minutes=10)),
        ("chiamare mia sorella", datetime(2026, 11, 26, 16, 0, tzinfo=UTC)),
        ("the dentist", datetime(2026, 11, 27, 8, 0, tzinfo=UTC)),
    ]
    assert {(r.chat_id, r.device, r.time_zone) for r in stored} == {(chat.id, "laptop", "Europe/Rome")}
    assert len(changes) == 3
    listed = await tools.call("list_reminders", {})
    assert [r["text"] for r in listed["reminders"]] == ["pasta", "chiamare mia sorella", "the dentist"]


async def test_a_time_past_or_unreadable_is_refused_with_how_to_say_it(store, embedder, config):
    tools, *_ = await registry(store, embedder, config)
    assert "past" in (await tools.call("set_reminder", {"text": "x", "when": "yesterday at 10:00"}))["error"]
    assert "could not read" in (await tools.call("set_reminder", {"text": "x", "when": "whenever"}))["error"]
    assert await store.list_reminders() == []


async def test_a_time_counted_back_from_now_is_past_not_tomorrow(store, embedder, config):
    """ "in -5 minutes" was set for tomorrow, 5 minutes before now: a time of day already past is
    tomorrow's, but a time counted from now into the past is past."""
    tools, *_ = await registry(store, embedder, config, ("it",))
    for when in ("in -5 minutes", "5 minutes ago", "5 minuti fa", "in -1 hours"):
        answer = await tools.call("set_reminder", {"text": "x", "when": when})
        assert "already past" in answer.get("error", ""), (when, answer)
    timer = await tools.call("set_timer", {"duration": "-5 minutes"})
    assert "already past" in timer.get("error", ""), timer
    assert await store.list_reminders() == []
    # a time of day already past today is still tomorrow's (it is 14:03 in Rome)
    assert (await tools.call("set_reminder", {"text": "y", "when": "at 13:00"}))["due"] == "tomorrow at 13:00"


async def test_cancel_by_description_and_ambiguity_asks_which(store, embedder, config):
    tools, *_ = await registry(store, embedder, config)
    await tools.call("set_reminder", {"text": "dentist appointment", "when": "tomorrow at 09:00"})
    await tools.call("set_reminder", {"text": "call the dentist back", "when": "at 16:00"})
    await tools.call("set_reminder", {"text": "water the plants", "when": "at 18:00"})
    ambiguous = await tools.call("cancel_reminder", {"description": "the dentist one"})
    assert ambiguous["result"] == "ambiguous" and len(ambiguous["candidates"]) == 2
    pick = ambiguous["candidates"][0]["reminder_id"]
    assert (await tools.call("cancel_reminder", {"reminder_id": pick}))["result"] == "cancelled"
    plants = await tools.call("cancel_reminder", {"description": "plants"})
    assert plants["result"] == "cancelled" and plants["text"] == "water the plants"
    assert [r.text for r in await store.list_reminders()] == ["dentist appointment"]
    assert (await tools.call("cancel_reminder", {"description": "taxes"}))["result"] == "none"


async def test_take_me_there_switches_to_the_chat_of_the_reminder_just_said(store, embedder, config):
    tools, session, chat, _ = await registry(store, embedder, config)
    said = await tools.call("set_timer", {"duration": "1 minute", "label": "tea"})
    await store.claim_reminder(said["reminder_id"], "laptop")
    session.chat_id = "somewhere else"  # the user moved on since
    answer = await tools.call("reminder_chat", {"description": "the reminder"})
    assert answer["result"] == "switching" and session.switches == [chat.id]


async def test_a_text_longer_than_the_bound_is_refused_with_the_bound(store, embedder, config):
    """A 1 MB text was accepted; at its time the speech command failed with "Argument list too long"."""
    tools, *_ = await registry(store, embedder, config)
    limit = config.reminder_max_chars
    for args in (
        ("set_reminder", {"text": "x" * 1_000_000, "when": "in 10 minutes"}),
        ("set_timer", {"duration": "10 minutes", "label": "y" * (limit + 1)}),
    ):
        answer = await tools.call(*args)
        assert f"at most {limit} characters" in answer.get("error", ""), answer
    assert await store.list_reminders() == []
    said = await tools.call("set_reminder", {"text": "z" * limit, "when": "in 10 minutes"})
    assert said["result"] == "set" and len(said["text"]) == limit
