"""Storing many chats at once: each chat stored once, each named chat compacted once, and a
repeated copy copying nothing more."""

from __future__ import annotations

import pytest

from parla.memory.compaction.compactor import CompactionWorker
from parla.memory.imports.storing import compact_chats, copy_chat, store_only
from parla.memory.store.sqlite.store import SQLiteChatStore
from parla.records.pins import Pin
from tests.conftest import make_turns

pytestmark = pytest.mark.tier("fast")


async def test_copy_chat_copies_turns_title_and_pins_once(store, tmp_path):
    chat = (await store.create_chat(title="Japan trip", turns=make_turns(4))).chat
    await store.add_pin(Pin(chat_id=chat.id, content="likes trains", importance=5))
    async with SQLiteChatStore(tmp_path / "other.db") as other:
        first = await copy_chat(store, other, chat)
        again = await copy_chat(store, other, chat)
        assert (first.added, again.added) == (4, 0)
        assert first.chat.title == "Japan trip"
        assert [p.content for p in await other.list_pins(chat.id)] == ["likes trains"]
        assert [t.id for t in (await other.load_history(chat.id)).full_history] == [
            t.id for t in (await store.load_history(chat.id)).full_history
        ]


async def test_store_chats_compacts_each_named_chat_once(store, compactor):
    counts: list[int] = []
    done: list[str] = []

    def worker(count: int) -> CompactionWorker:
        counts.append(count)
        return CompactionWorker(compactor, on_done=lambda cid, ok: done.append(cid))

    async def store_one(n: int) -> tuple[str, str | None]:
        chat = (await store.create_chat(title=f"chat {n}", turns=make_turns(3, prefix=f"c{n}"))).chat
        return chat.id, (chat.id if n != 2 else None)

    results, ids = await store_only([0, 1, 2], store_one)
    assert len(results) == 3 and ids == results[:2]
    not_compacted, offline = await compact_chats(ids, worker)
    assert counts == [2] and sorted(done) == sorted(results[:2]) and (not_compacted, offline) == ({}, {})
    for cid in results[:2]:
        assert (await store.get_chat(cid)).summary_text
