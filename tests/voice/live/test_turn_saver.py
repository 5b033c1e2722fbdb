"""The turn saver alone, over the daemon's chat memory on a real SQLite store: batches stored in the
order they were said, turns refused for good kept locally, what is unsaved at close kept
locally with the reason, and held turns on disk at once, forgotten only once their final version
is stored."""

from __future__ import annotations

import asyncio
import sqlite3

import pytest

from parla.daemon.chat_memory import ChatMemory
from parla.memory.config import MemoryConfig
from parla.memory.store.refused import RefusedTurns
from parla.voice.live.status import EventKind, LiveStatus
from parla.voice.live.turn_saver import TurnSaver
from tests.conftest import eventually, make_turns

pytestmark = pytest.mark.tier("fast")


def saver(events: list[tuple[EventKind, str]], drain_s: float = 5.0) -> TurnSaver:
    """A saver that records what it says, but "stored" (told by the store's contents)."""
    return TurnSaver(LiveStatus(), lambda e: e.kind != "stored" and events.append((e.kind, e.detail)), drain_s)


async def _closed_while_locked(store, memory, events, batches) -> TurnSaver:
    """A saver given `batches` and closed while another connection holds the store's write lock."""
    s = saver(events, drain_s=0.3)
    other = sqlite3.connect(store.path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        s.start()
        for turns in batches:
            s.put(memory, turns)
        await s.close()
    finally:
        other.close()
    return s


async def test_batches_are_stored_in_the_order_they_were_said(store, tmp_path):
    chat = (await store.create_chat(title="Lisbon trip")).chat
    memory = ChatMemory(store, MemoryConfig(), chat.id, RefusedTurns(tmp_path / "refused.jsonl"))
    events: list[tuple[EventKind, str]] = []
    turns = make_turns(6)
    s = saver(events)
    s.start()
    for i in range(0, 6, 2):
        s.put(memory, turns[i : i + 2])
    assert s.status.unsaved_turns == 6
    await s.drain()
    assert s.status.unsaved_turns == 0
    await s.close()
    history = (await store.load_history(chat.id)).full_history
    assert [t.text for t in history] == [t.text for t in turns]
    assert events == [] and s.status.refused_turns == 0


async def test_turns_refused_for_good_are_kept_locally_and_counted(store, tmp_path):
    chat = (await store.create_chat(title="Lisbon trip")).chat
    refused = RefusedTurns(tmp_path / "refused.jsonl")
    memory = ChatMemory(store, MemoryConfig(), chat.id, refused)
    await store.delete_chat(chat.id)
    events: list[tuple[EventKind, str]] = []
    s = saver(events)
    s.start()
    s.put(memory, make_turns(2))
    await s.close()
    assert s.status.unsaved_turns == 0 and s.status.refused_turns == 2
    assert [(k.chat_id, k.reason.split(":")[0]) for k in refused.read()] == [(chat.id, "ChatNotFound")] * 2
    ((kind, detail),) = events
    assert kind == "save_refused" and detail.startswith(f"2 turns kept in {refused.path}: ChatNotFound")


async def test_what_is_unsaved_at_close_is_kept_locally_with_the_last_error(store, tmp_path):
    chat = (await store.create_chat(title="Lisbon trip")).chat
    refused = RefusedTurns(tmp_path / "kept.jsonl")
    memory = ChatMemory(store, MemoryConfig(), chat.id, refused)
    events: list[tuple[EventKind, str]] = []
    s = await _closed_while_locked(store, memory, events, [make_turns(2), make_turns(2, start=2)])
    assert s.status.unsaved_turns == 0 and s.status.refused_turns == 4
    kept = refused.read()
    assert [k.turn.text for k in kept] == [t.text for t in make_turns(4)]
    assert all(k.reason.startswith("not stored before the session closed (last error: ") for k in kept)
    assert (await store.get_chat(chat.id)).turn_count == 0


async def test_turns_neither_stored_nor_kept_are_told_lost(store, tmp_path):
    chat = (await store.create_chat(title="Lisbon trip")).chat
    unwritable = tmp_path / "kept.jsonl"
    unwritable.mkdir()  # the keep-aside file cannot be written either
    memory = ChatMemory(store, MemoryConfig(), chat.id, RefusedTurns(unwritable))
    events: list[tuple[EventKind, str]] = []
    await _closed_while_locked(store, memory, events, [make_turns(2)])
    assert [kind for kind, _ in events if kind != "save_failed"] == ["lost"]
    assert events[-1][1].startswith("IsADirectoryError")


async def test_held_turns_are_written_while_the_store_is_locked_and_forgotten_only_once_stored(store, tmp_path):
    chat = (await store.create_chat(title="Lisbon trip")).chat
    memory = ChatMemory(store, MemoryConfig(), chat.id, RefusedTurns(tmp_path / "refused.jsonl"))
    events: list[tuple[EventKind, str]] = []
    held, final = make_turns(2), make_turns(2, start=2)
    s = saver(events)
    other = sqlite3.connect(store.path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")  # the store is busy: the first batch waits and is retried
        s.start()
        s.put(memory, make_turns(2, start=10))
        s.hold(memory, held)
        await eventually(lambda: len(memory.held.read()) == 2, what="the held turns on disk")
        s.put(memory, final, [t.id for t in held])  # their final version, queued
        await asyncio.sleep(0.3)
        assert [k.turn.id for k in memory.held.read()] == [t.id for t in held], "forgotten before it was stored"
    finally:
        other.close()
    await s.drain()
    await s.close()
    assert not memory.held.path.exists()
    assert (await store.get_chat(chat.id)).turn_count == 4


async def test_held_turns_neither_stored_nor_kept_stay_on_disk(store, tmp_path):
    chat = (await store.create_chat(title="Lisbon trip")).chat
    unwritable = tmp_path / "kept.jsonl"
    unwritable.mkdir()  # the keep-aside file cannot be written
    held = RefusedTurns(tmp_path / "held.jsonl")
    memory = ChatMemory(store, MemoryConfig(), chat.id, RefusedTurns(unwritable), held_turns=held)
    events: list[tuple[EventKind, str]] = []
    turns = make_turns(2)
    s = saver(events, drain_s=0.3)
    other = sqlite3.connect(store.path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        s.start()
        s.hold(memory, turns)
        s.put(memory, turns, [t.id for t in turns])
        await s.close()
    finally:
        other.close()
    assert [kind for kind, _ in events if kind != "save_failed"] == ["lost"]
    assert [k.turn.id for k in held.read()] == [t.id for t in turns]  # stored at the next start
