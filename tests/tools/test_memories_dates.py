"""remember keeps a relative date the user said ("next Tuesday", "domani") with its absolute date,
computed from when it was said in the user's zone, in a pin and in the profile (real store)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from parla.kernel.local_time import LocalClock
from parla.memory.context import load_context
from parla.tools.memories import MemoryTools, RememberArgs
from tests.tools.test_chats import Session
from tests.tools.test_memories import memory_tools

pytestmark = pytest.mark.tier("fast")


def tools_at(store, embedder, config, chat_id, utc: datetime, zone: str, language: str) -> MemoryTools:
    return memory_tools(store, embedder, config, Session(chat_id), LocalClock(zone, lambda: utc), [language])


async def test_a_relative_date_is_pinned_with_its_date_in_the_users_zone(store, embedder, config):
    chat = (await store.create_chat(title="Health")).chat
    # Tuesday 23:30 UTC is already Wednesday in Rome: "tomorrow" is Thursday there
    tools = tools_at(store, embedder, config, chat.id, datetime(2026, 11, 24, 23, 30, tzinfo=UTC), "Europe/Rome", "en")
    await tools.remember(RememberArgs(fact="The dentist is next Tuesday at 3pm"))
    await tools.remember(RememberArgs(fact="Call the plumber tomorrow"))
    await tools.remember(RememberArgs(fact="The dog is called Miso; it may rain in May"))
    assert sorted(p.content for p in await store.list_pins(chat.id)) == [
        "Call the plumber tomorrow (Thursday 26 November 2026)",
        "The dentist is next Tuesday at 3pm (Tuesday 1 December 2026, 15:00)",
        "The dog is called Miso; it may rain in May",  # no relative date: the words as said
    ]


async def test_an_italian_relative_date_about_the_user_reaches_every_chat_as_a_date(store, embedder, config):
    chat = (await store.create_chat(title="Famiglia")).chat
    tools = tools_at(store, embedder, config, chat.id, datetime(2026, 11, 25, 9, 0, tzinfo=UTC), "Europe/Rome", "it")
    await tools.remember(RememberArgs(fact="La cena con Marco è tra 2 settimane", about_user=True, about="cena"))
    other = (await store.create_chat(title="Altro")).chat
    shown = (await load_context(store, other.id, config)).render()
    assert "La cena con Marco è tra 2 settimane (Wednesday 9 December 2026)" in shown
