"""The outbox file under the running store: damaged, or deleted, while Supabase (the PostgREST
shim over real Postgres) answers. Writing must go on, and the user must be told."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sqlite3
from pathlib import Path

import pytest

from parla.memory.errors import StoreOffline
from parla.memory.store.outbox import Outbox
from parla.memory.store.supabase.store import RetryPolicy, SupabaseChatStore
from tests.conftest import make_turns, signed_in_store

pytestmark = pytest.mark.tier("fast")

EMAIL = "ada@example.com"


def outbox_file(tmp_path: Path) -> Path:
    return tmp_path / f"outbox-{EMAIL}.db"


async def reopen(peer, tmp_path: Path) -> SupabaseChatStore:
    return await SupabaseChatStore.connect(
        peer.url,
        peer.anon_key,
        outbox_path=outbox_file(tmp_path),
        session_file=tmp_path / f"session-{EMAIL}.json",
        retry=RetryPolicy(attempts=1, delay=60.0, max_delay=60.0),  # replays only when the test asks
    )


def damage_pages(path: Path) -> None:
    """Garbage over every page but the header, as a failing disk or a bad copy leaves it; the
    zeroed shared-memory index makes a connection still open read the pages again."""
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    size = path.stat().st_size
    with path.open("r+b") as f:
        f.seek(4096)
        f.write(b"\xff" * (size - 4096))
    shm = Path(f"{path}-shm")
    if shm.exists():
        shm.write_bytes(b"\0" * shm.stat().st_size)


@pytest.mark.tier("postgres")
async def test_a_file_that_is_not_a_database_is_set_aside_and_writing_goes_on(supabase, tmp_path, caplog):
    async with await signed_in_store(supabase, tmp_path) as store:
        chat = (await store.create_chat(turns=make_turns(1))).chat
    junk = b"this is not an SQLite file, a sync tool or a bad restore put it here\n" * 100
    outbox_file(tmp_path).write_bytes(junk)
    with caplog.at_level(logging.ERROR):
        async with await reopen(supabase, tmp_path) as store:
            assert (await store.append_turns(chat.id, make_turns(2, start=1))).added == 2
            stats = await store.stats()
    (aside,) = store.outbox.set_aside_files()
    assert aside.read_bytes() == junk and aside.name.startswith(outbox_file(tmp_path).name + ".damaged-")
    assert stats.outbox_set_aside == 1 and "damaged" in (stats.outbox_problem or "")
    assert any("damaged" in r.getMessage() and str(aside) in r.getMessage() for r in caplog.records)
    assert stats.total_messages == 3


@pytest.mark.tier("postgres")
async def test_damaged_pages_at_start_are_set_aside(supabase, tmp_path):
    async with await signed_in_store(supabase, tmp_path) as store:
        chat = (await store.create_chat(turns=make_turns(1))).chat
    damage_pages(outbox_file(tmp_path))
    async with await reopen(supabase, tmp_path) as store:
        assert (await store.append_turns(chat.id, make_turns(1, start=1))).turns[0].seq == 2
        assert len(store.outbox.set_aside_files()) == 1 and await store.outbox.depth() == (0, 0)


@pytest.mark.tier("postgres")
async def test_a_file_damaged_while_running_is_set_aside_and_writing_goes_on(supabase, tmp_path, caplog):
    async with await reopen_fresh(supabase, tmp_path) as store:
        chat = (await store.create_chat(turns=make_turns(1))).chat
        damage_pages(outbox_file(tmp_path))
        with caplog.at_level(logging.ERROR):
            result = await store.append_turns(chat.id, make_turns(2, start=1))
        assert [t.seq for t in result.turns] == [2, 3]
        assert len(store.outbox.set_aside_files()) == 1
        assert "damaged" in (await store.stats()).outbox_problem
    assert any(r.levelno == logging.ERROR and "damaged" in r.getMessage() for r in caplog.records)


async def reopen_fresh(peer, tmp_path: Path) -> SupabaseChatStore:
    store = await signed_in_store(peer, tmp_path)
    store.retry = RetryPolicy(attempts=1, delay=60.0, max_delay=60.0)
    return store


@pytest.mark.tier("postgres")
@pytest.mark.parametrize("what", ["deleted", "replaced", "replaced by junk"])
async def test_a_file_deleted_while_running_keeps_its_queue(supabase, tmp_path, caplog, what):
    async with await reopen_fresh(supabase, tmp_path) as store:
        chat = (await store.create_chat(turns=make_turns(1))).chat
        supabase.shim.refuse()
        queued = make_turns(3, start=1)
        for turn in queued:
            with pytest.raises(StoreOffline):
                await store.append_turns(chat.id, [turn])
        keys = [e.key for e in await store.outbox.pending()]
        path = outbox_file(tmp_path)
        for suffix in ("", "-wal", "-shm"):  # `rm parla.db*`, or a restore of an old copy
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        if what == "replaced":
            sqlite3.connect(path).close()
        if what == "replaced by junk":
            path.write_bytes(b"junk" * 1000)
        with caplog.at_level(logging.ERROR):
            assert await store.outbox.depth() == (3, 0)  # what `parla status` asks
        assert path.exists() and "deleted or replaced" in (store.outbox.problems[-1])
        assert len(store.outbox.set_aside_files()) == (1 if what == "replaced by junk" else 0)
        assert [e.key for e in await store.outbox.pending()] == keys  # a retry of each still gets its first answer
    assert any(r.levelno == logging.ERROR and "deleted or replaced" in r.getMessage() for r in caplog.records)
    supabase.shim.recover()
    async with await reopen(supabase, tmp_path) as store:  # the next run sends what the last one queued
        assert await store.flush() == 3
        history = await store.load_history(chat.id)
    assert [t.id for t in history.full_history[1:]] == [t.id for t in queued]


@pytest.mark.tier("postgres")
async def test_a_file_deleted_just_before_the_store_closes_keeps_its_queue(supabase, tmp_path):
    async with await reopen_fresh(supabase, tmp_path) as store:
        chat = (await store.create_chat(turns=make_turns(1))).chat
        supabase.shim.refuse()
        with pytest.raises(StoreOffline):
            await store.append_turns(chat.id, make_turns(2, start=1))
        os.unlink(outbox_file(tmp_path))
    supabase.shim.recover()
    async with await reopen(supabase, tmp_path) as store:
        assert await store.flush() == 1
        assert (await store.get_chat(chat.id)).turn_count == 3


@pytest.mark.parametrize("steps", [0, 1, 2, 3, 5, 8, 13, 21, 34])
async def test_cancelled_while_carrying_a_deleted_files_queue_over_loses_nothing(tmp_path, steps):
    path = tmp_path / "parla.db"
    outbox = Outbox(path, remote="https://example.supabase.co#session")
    await outbox.open()
    try:
        for i in range(3):
            await outbox.put("append_turns", f"chat-{i}", {"turns": [{"text": f"turn {i}"}]})
        path.unlink()
        task = asyncio.create_task(outbox.depth())  # finds the file gone and carries the queue over
        for _ in range(steps):
            await asyncio.sleep(0.001)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        assert await outbox.depth() == (3, 0)
    finally:
        await outbox.close()
    again = Outbox(path, remote="https://example.supabase.co#session")
    await again.open()
    try:
        assert [e.chat_id for e in await again.pending()] == ["chat-0", "chat-1", "chat-2"]
    finally:
        await again.close()


@pytest.mark.parametrize("steps", [0, 1, 2, 3, 5, 8])
@pytest.mark.parametrize("operation", ["put", "ack", "fail"])
async def test_a_cancelled_operation_leaves_no_transaction_open(tmp_path, steps, operation):
    path = tmp_path / "parla.db"
    outbox = Outbox(path, remote="https://example.supabase.co#session")
    await outbox.open()
    try:
        entry = await outbox.put("append_turns", "chat", {"turns": [{"text": "first"}]})
        work = {
            "put": lambda: outbox.put("append_turns", "chat", {"turns": [{"text": "second"}]}),
            "ack": lambda: outbox.ack(entry),
            "fail": lambda: outbox.fail(entry, "refused"),
        }[operation]
        task = asyncio.create_task(work())
        for _ in range(steps):
            await asyncio.sleep(0)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        # another process (`parla stats`, a second device's CLI) can write at once: no lock is held
        other = sqlite3.connect(path, timeout=0)
        try:
            other.execute("BEGIN IMMEDIATE")
            other.rollback()
        finally:
            other.close()
    finally:
        await outbox.close()


@pytest.mark.parametrize(
    "ops",
    [
        "'create_chat', 'append_turns'",  # before the user's writes were queued
        (  # before the profile's
            "'create_chat', 'append_turns', 'add_pin', 'rename_chat', 'set_pin_forgotten', 'delete_pin', "
            "'delete_chat', 'set_fact_lines'"
        ),
    ],
)
async def test_an_outbox_of_an_earlier_version_keeps_its_entries_and_takes_every_write(tmp_path, ops):
    path = tmp_path / "outbox.db"
    with contextlib.closing(sqlite3.connect(path)) as db:  # the table as that version made it
        db.execute(
            "CREATE TABLE outbox (id INTEGER PRIMARY KEY AUTOINCREMENT, remote TEXT NOT NULL, op TEXT NOT NULL "
            f"CHECK (op IN ({ops})), chat_id TEXT NOT NULL, payload TEXT NOT NULL, "
            "queued_at TEXT NOT NULL, failed TEXT)"
        )
        db.execute(
            "INSERT INTO outbox (id, remote, op, chat_id, payload, queued_at) VALUES (7, 'r', 'append_turns', 'c', "
            "'{\"turns\": []}', '2026-01-05T09:00:00+00:00')"
        )
        db.commit()
    outbox = Outbox(path, "r")
    await outbox.open()
    try:
        pin = await outbox.put("add_pin", "c", {"pin": {"content": "kept"}})
        entry = await outbox.put("save_profile", "", {"entries": [], "edit": False})
        assert [(e.id, e.op) for e in await outbox.pending()] == [
            (7, "append_turns"),
            (pin, "add_pin"),
            (entry, "save_profile"),
        ]
        assert pin > 7
        keys = [e.key for e in await outbox.pending()]  # the old entry is sent without one, as it was
        assert keys[0] is None and None not in keys[1:] and len(set(keys)) == 3
    finally:
        await outbox.close()


async def test_a_write_back_to_an_earlier_value_is_queued_after_the_ones_between(tmp_path):
    outbox = Outbox(tmp_path / "outbox.db", "r")
    await outbox.open()
    try:
        for title in ("Japan", "Kyoto", "Japan"):  # renamed, then back, while the store is away
            await outbox.put("rename_chat", "c", {"title": title})
        assert [e.payload["title"] for e in await outbox.pending()] == ["Japan", "Kyoto", "Japan"]
    finally:
        await outbox.close()


@pytest.mark.tier("postgres")
@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a file to another user")
async def test_an_outbox_of_another_user_put_in_its_place_while_running_is_set_aside_unused(supabase, tmp_path):
    """Another user swaps in an outbox of theirs, holding a queued delete of the user's chat, while
    the turns wait for the server: theirs is moved aside and never read, the user's queue goes on."""
    async with await reopen_fresh(supabase, tmp_path) as store:
        chat = (await store.create_chat(turns=make_turns(1))).chat
        supabase.shim.refuse()
        for turn in make_turns(2, start=1):
            with pytest.raises(StoreOffline):
                await store.append_turns(chat.id, [turn])
        planted = Outbox(tmp_path / "theirs.db", store.outbox.remote)
        await planted.open()
        await planted.put("delete_chat", chat.id, {})
        await planted.close()
        path = outbox_file(tmp_path)
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        os.replace(tmp_path / "theirs.db", path)
        os.chown(path, 65534, 65534)
        os.chmod(path, 0o666)
        assert await store.outbox.depth() == (2, 0)
        (aside,) = tmp_path.glob(f"{path.name}.of-another-user-*")
        assert aside.stat().st_uid == 65534 and path.stat().st_uid == os.getuid()
        assert "another user (uid 65534)" in store.outbox.problems[-1] and str(aside) in store.outbox.problems[-1]
    supabase.shim.recover()
    async with await reopen(supabase, tmp_path) as store:
        assert await store.flush() == 2
        assert (await store.get_chat(chat.id)).turn_count == 3  # not deleted
