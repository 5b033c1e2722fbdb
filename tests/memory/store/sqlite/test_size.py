"""The embedded store's bytes: vectors at half precision, older files' float32 vectors converted
as they are opened, and what `parla stats` reports of them."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from parla.memory.store.sqlite.schema import MIGRATIONS
from parla.memory.store.sqlite.size import store_size
from parla.memory.store.sqlite.store import SQLiteChatStore
from parla.records.summary import SummaryLevel
from parla.records.turn import MessageRange
from tests.conftest import make_turns
from tests.memory.store.test_contract import emb

pytestmark = pytest.mark.tier("fast")

DIM = 8
HALF = next(i for i, m in enumerate(MIGRATIONS) if "parla_half_vector" in m)
VECTORS = (
    "SELECT summary_embedding FROM chats WHERE summary_embedding IS NOT NULL "
    "UNION ALL SELECT embedding FROM summaries UNION ALL SELECT embedding FROM facts WHERE embedding IS NOT NULL"
)


async def two_chats(store: SQLiteChatStore) -> list[str]:
    ids = []
    for i in range(2):
        chat = (await store.create_chat(turns=make_turns(4))).chat
        await store.set_summary_text(chat.id, emb(f"about {i}", i, DIM), 0)
        await store.upsert_summary(
            chat.id, SummaryLevel.CHUNK, MessageRange(start=1, end=4), emb(f"chunk {i}", 10 + i, DIM)
        )
        await store.upsert_facts(chat.id, MessageRange(start=1, end=4), [f"fact {i}"], emb(f"- fact {i}", 20 + i, DIM))
        ids.append(chat.id)
    return ids


async def test_vectors_are_stored_at_half_precision(tmp_path):
    path = tmp_path / "p.db"
    async with SQLiteChatStore(path) as store:
        await two_chats(store)
    with sqlite3.connect(path) as raw:
        assert {len(r[0]) for r in raw.execute(VECTORS)} == {DIM * 2}
    size = store_size(path)
    assert size.vectors == 6 * DIM * 2
    assert size.parts is not None and size.parts["summaries_and_facts"] > 0


async def test_a_file_with_float32_vectors_is_converted_and_searches_alike(tmp_path):
    path = tmp_path / "old.db"
    async with SQLiteChatStore(path) as store:
        ids = await two_chats(store)
        query = emb("about 1", 1, DIM)
        before = [(m.chat_id, round(m.texts[0].similarity, 2)) for m in await store.search(query, 5)]
    # the file as the previous Parla wrote it: float32 vectors, the last migration not applied
    with sqlite3.connect(path) as raw:
        for table, column in (("chats", "summary_embedding"), ("summaries", "embedding"), ("facts", "embedding")):
            for rowid, blob in raw.execute(
                f"SELECT rowid, {column} FROM {table} WHERE {column} IS NOT NULL"
            ).fetchall():
                wide = np.frombuffer(blob, dtype="<f2").astype("<f4").tobytes()
                raw.execute(f"UPDATE {table} SET {column} = ? WHERE rowid = ?", (wide, rowid))
        # and without what the migrations after the conversion add
        raw.executescript("DROP INDEX reminders_unsaid; ALTER TABLE reminders DROP COLUMN said_at")
        raw.execute(f"PRAGMA user_version = {HALF}")
    with sqlite3.connect(path) as raw:
        assert {len(r[0]) for r in raw.execute(VECTORS)} == {DIM * 4}
    async with SQLiteChatStore(path) as store:
        assert [(m.chat_id, round(m.texts[0].similarity, 2)) for m in await store.search(query, 5)] == before
        assert before[0][0] == ids[1]
    with sqlite3.connect(path) as raw:
        assert {len(r[0]) for r in raw.execute(VECTORS)} == {DIM * 2}
