"""Every SQLite store operation is safe to cancel at any await: cancelled after each number of
event-loop steps in turn, and while another connection holds the file's write lock, the store
still writes, every chat is whole and another connection can write."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from parla.memory.store.protocol import CompactionCommit
from parla.memory.store.sqlite.connection import BUSY_WAIT_S
from parla.memory.store.sqlite.store import SQLiteChatStore
from parla.records.facts import format_fact_lines
from parla.records.pins import Pin
from parla.records.summary import SummaryLevel
from parla.records.turn import MessageRange, Turn
from tests.conftest import eventually, make_turns
from tests.memory.store.test_contract import emb, vec

pytestmark = pytest.mark.tier("fast")

FACTS = ["Anna marries in Lisbon"]


@dataclass
class World:
    """What the reads read: one chat with turns, a description, a summary, facts and a pin."""

    chat_id: str
    probe_id: str


async def _world(store: SQLiteChatStore) -> World:
    chat = (await store.create_chat(title="world", turns=make_turns(4))).chat
    await store.set_summary_text(chat.id, emb("about the world", 1), 0)
    await store.upsert_summary(chat.id, SummaryLevel.CHUNK, MessageRange(start=1, end=2), emb("a summary", 2))
    await store.upsert_facts(chat.id, MessageRange(start=1, end=2), FACTS, emb(format_fact_lines(FACTS), 3))
    await store.add_pin(Pin(chat_id=chat.id, content="likes tea"))
    probe = (await store.create_chat(title="probe")).chat
    return World(chat.id, probe.id)


async def _fresh_chat(store: SQLiteChatStore, _: World) -> str:
    return (await store.create_chat(turns=make_turns(4))).chat.id


async def _world_chat(_: SQLiteChatStore, world: World) -> str:
    return world.chat_id


async def _new_pin(store: SQLiteChatStore, world: World) -> str:
    return (await store.add_pin(Pin(chat_id=world.chat_id, content="a pin to change"))).id


async def _all_vectors(store: SQLiteChatStore, _: World) -> list[Any]:
    return [(t.ref, vec(i)) for i, t in enumerate(await store.embedded_texts())]


Setup = Callable[[SQLiteChatStore, World], Awaitable[Any]]
Op = Callable[[SQLiteChatStore, Any], Awaitable[Any]]

# (name, what the operation needs made first (not cancelled), the operation)
OPERATIONS: list[tuple[str, Setup, Op]] = [
    ("create_chat", _world_chat, lambda s, _: s.create_chat(title="new", turns=make_turns(5))),
    ("get_chat", _world_chat, lambda s, c: s.get_chat(c)),
    ("find_chats", _world_chat, lambda s, c: s.find_chats(c[:8])),
    ("list_chats", _world_chat, lambda s, _: s.list_chats()),
    ("rename_chat", _world_chat, lambda s, c: s.rename_chat(c, "renamed")),
    ("delete_chat", _fresh_chat, lambda s, c: s.delete_chat(c)),
    ("append_turns", _fresh_chat, lambda s, c: s.append_turns(c, make_turns(5, start=4))),
    ("load_history", _world_chat, lambda s, c: s.load_history(c)),
    ("load_turns", _world_chat, lambda s, c: s.load_turns(c, 2)),
    ("load_memory", _world_chat, lambda s, c: s.load_memory(c)),
    (
        "commit_compaction",
        _fresh_chat,
        lambda s, c: s.commit_compaction(CompactionCommit(c, 0, 2, "rolling", emb("described", 4), "A title")),
    ),
    ("set_summary_text", _fresh_chat, lambda s, c: s.set_summary_text(c, emb("described", 5), 0, "A title")),
    (
        "upsert_summary",
        _fresh_chat,
        lambda s, c: s.upsert_summary(c, SummaryLevel.CHUNK, MessageRange(start=1, end=4), emb("sum", 6)),
    ),
    ("list_summaries", _world_chat, lambda s, c: s.list_summaries(c)),
    (
        "upsert_facts",
        _fresh_chat,
        lambda s, c: s.upsert_facts(c, MessageRange(start=1, end=4), FACTS, emb(format_fact_lines(FACTS), 7)),
    ),
    ("list_facts", _world_chat, lambda s, c: s.list_facts(c)),
    (
        "set_fact_lines",
        _world_chat,
        lambda s, c: s.set_fact_lines(c, MessageRange(start=1, end=2), [], FACTS, None),
    ),
    ("add_pin", _world_chat, lambda s, c: s.add_pin(Pin(chat_id=c, content="added"))),
    ("list_pins", _world_chat, lambda s, c: s.list_pins(c)),
    ("set_pin_forgotten", _new_pin, lambda s, p: s.set_pin_forgotten(p, True)),
    ("delete_pin", _new_pin, lambda s, p: s.delete_pin(p)),
    ("search", _world_chat, lambda s, _: s.search(emb("query", 8), 5)),
    ("search_words", _world_chat, lambda s, _: s.search_words(["still", "writing"], 5)),  # its own connection
    ("embedder_info", _world_chat, lambda s, _: s.embedder_info()),
    ("stats", _world_chat, lambda s, _: s.stats()),
    ("embedded_texts", _world_chat, lambda s, _: s.embedded_texts()),
    ("replace_embeddings", _all_vectors, lambda s, items: s.replace_embeddings(items, "test-8")),
]


def _another_connection_writes(path: Path) -> None:
    """A second connection (as another process would) takes the write lock and commits."""
    other = sqlite3.connect(path, timeout=2, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        other.execute("INSERT INTO meta (key, value) VALUES ('probe', '1') ON CONFLICT (key) DO UPDATE SET value = 1")
        other.execute("COMMIT")
    finally:
        other.close()


def _intact(path: Path, world: World) -> None:
    raw = sqlite3.connect(path)
    try:
        assert raw.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert raw.execute("PRAGMA foreign_key_check").fetchall() == []
        # Every chat is whole: an append (or a create with turns) is all or nothing.
        broken = raw.execute(
            "SELECT c.id, c.turn_count, count(t.id), coalesce(max(t.seq), 0) FROM chats c "
            "LEFT JOIN turns t ON t.chat_id = c.id GROUP BY c.id "
            "HAVING c.turn_count != count(t.id) OR c.turn_count != coalesce(max(t.seq), 0) "
            "OR c.turn_count NOT IN (0, 4, 5, 9) AND c.id != ?",
            (world.probe_id,),
        ).fetchall()
        assert broken == []
        assert raw.execute("SELECT count(*) FROM turns WHERE chat_id = ?", (world.chat_id,)).fetchone()[0] == 4
    finally:
        raw.close()


async def _still_healthy(store: SQLiteChatStore, world: World) -> None:
    # the store itself still writes (not stuck inside a transaction) ...
    await asyncio.wait_for(store.append_turns(world.probe_id, [Turn.of("user", "still writing")]), 15)
    # ... and does not hold the write lock once it is idle
    await asyncio.to_thread(_another_connection_writes, store.path)
    await asyncio.to_thread(_intact, store.path, world)


async def _cancel_after(steps: int, op: Awaitable[Any]) -> bool:
    """Run `op`, cancel it after `steps` event-loop steps; True when it finished first."""
    task = asyncio.ensure_future(op)
    for _ in range(steps):
        if task.done():
            break
        await asyncio.sleep(0)
    finished = task.done()
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    return finished


def _steps() -> list[int]:
    """Every step at first, then growing: the operation's thread may need many steps on a busy
    machine, and each count must still be tried until one lets it finish."""
    return [*range(24), *(n * k for n in (2**e for e in range(4, 17)) for k in (2, 3))]


@pytest.mark.parametrize(("name", "setup", "op"), OPERATIONS, ids=[o[0] for o in OPERATIONS])
async def test_cancelled_at_every_step_leaves_the_store_usable(tmp_path, name, setup, op):
    async with SQLiteChatStore(tmp_path / "parla.db") as store:
        world = await _world(store)
        for steps in _steps():
            target = await setup(store, world)
            finished = await _cancel_after(steps, op(store, target))
            await _still_healthy(store, world)
            if finished:
                break
        else:
            pytest.fail(f"{name} did not finish within {steps} event-loop steps")


@pytest.mark.parametrize(("name", "setup", "op"), OPERATIONS, ids=[o[0] for o in OPERATIONS])
async def test_cancelled_while_another_connection_holds_the_write_lock(tmp_path, name, setup, op):
    async with SQLiteChatStore(tmp_path / "parla.db") as store:
        world = await _world(store)
        target = await setup(store, world)
        holder = sqlite3.connect(store.path, isolation_level=None, check_same_thread=False)
        holder.execute("BEGIN IMMEDIATE")
        try:
            task = asyncio.ensure_future(op(store, target))
            await asyncio.sleep(0.05)  # a write now waits for the lock in SQLite's busy handler
            task.cancel()
            try:
                await asyncio.wait_for(task, 5)  # a read may well have finished first
            except asyncio.CancelledError:
                pass
        finally:
            holder.execute("COMMIT")
            holder.close()
        await _still_healthy(store, world)


def threads() -> set[threading.Thread]:
    """The running threads but the event loop's own workers (asyncio.to_thread)."""
    return {t for t in threading.enumerate() if not t.name.startswith("asyncio_")}


async def quiet_threads() -> set[threading.Thread]:
    """The threads running once every closed store's thread has ended (a close does not join it)."""
    await eventually(lambda: not [t for t in threads() if t.name.startswith("parla-sqlite")])
    return threads()


async def test_a_cancelled_open_leaves_no_thread_and_no_lock(tmp_path):
    path = tmp_path / "parla.db"
    async with SQLiteChatStore(path) as store:
        world = await _world(store)
    before = await quiet_threads()
    for steps in _steps():
        store = SQLiteChatStore(path)
        finished = await _cancel_after(steps, store.open())
        if finished:
            await store.close()
            break
        await asyncio.to_thread(_another_connection_writes, path)
        await eventually(lambda: threads() <= before, what="the cancelled open's thread to end")
    async with SQLiteChatStore(path) as store:
        await _still_healthy(store, world)


async def test_a_write_cancelled_while_it_waits_for_the_lock_frees_the_connection(tmp_path):
    """A shutdown cancels a write that waits for another program's write lock: the store's thread
    stops waiting, so closing the store does not wait the whole busy wait out."""
    store = SQLiteChatStore(tmp_path / "parla.db")
    await store.open()
    chat = (await store.create_chat(title="Lisbon")).chat
    holder = sqlite3.connect(store.path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    try:
        write = asyncio.ensure_future(store.append_turns(chat.id, make_turns(2)))
        await asyncio.sleep(0.3)
        write.cancel()
        with pytest.raises(asyncio.CancelledError):
            await write
        await asyncio.wait_for(store.close(), BUSY_WAIT_S / 2)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    async with SQLiteChatStore(tmp_path / "parla.db") as store:
        assert (await store.get_chat(chat.id)).turn_count == 0
