"""What only the SQLite store does: several processes on one file, schema versions."""

from __future__ import annotations

import asyncio
import sqlite3

import pytest

from memory.store import StoreError
from memory.store.sqlite import SQLiteChatStore
from tests.conftest import make_turns
from tests.memory.store.test_contract import emb


async def test_a_write_in_another_process_shows_up_in_the_next_search(store):
    a = (await store.create_chat(turns=make_turns(2))).chat
    await store.set_description(a.id, emb("about a", 1), 0)
    assert [round(m.similarity, 4) for m in await store.search(emb("q", 2), 10)] != [1.0]
    async with SQLiteChatStore(store.path) as other:
        await other.set_description(a.id, emb("about a, changed", 2), 0)
    assert [round(m.similarity, 4) for m in await store.search(emb("q", 2), 10)] == [1.0]


async def test_two_processes_appending_lose_nothing(tmp_path):
    path = tmp_path / "shared.db"
    async with SQLiteChatStore(path) as a, SQLiteChatStore(path) as b:
        chat = (await a.create_chat()).chat
        left, right = make_turns(40, prefix="L"), make_turns(40, prefix="R")

        async def feed(store, turns):
            for t in turns:
                await store.append_turns(chat.id, [t])

        await asyncio.gather(feed(a, left), feed(b, right))
        history = await a.load_history(chat.id)
    assert sorted(t.id for t in history.full_history) == sorted(t.id for t in left + right)
    assert [t.seq for t in history.full_history] == list(range(1, 81))
    # Each writer's own order is kept.
    assert [t.id for t in history.full_history if t.text.startswith("L")] == [t.id for t in left]


async def test_reopen_keeps_data_and_rejects_newer_schema(tmp_path):
    path = tmp_path / "p.db"
    async with SQLiteChatStore(path) as s:
        chat = (await s.create_chat(turns=make_turns(2))).chat
    async with SQLiteChatStore(path) as s:
        assert (await s.get_chat(chat.id)).turn_count == 2
    with sqlite3.connect(path) as raw:
        raw.execute("PRAGMA user_version = 99")
    with pytest.raises(StoreError, match="upgrade Parla"):
        async with SQLiteChatStore(path):
            pass
