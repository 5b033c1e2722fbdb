"""A reminder whose saying was cut off is said again, with the daemon's real scheduler on real
stores: Supabase through the PostgREST peer (with this device's copy, as the daemon opens it), the
copy alone while the server is away, a mark the SQLite file refused, written at the next read, a
failed read of the cut-off ones, and a saying that failed.
The daemon as its own process, stopped or killed while it says one: test_reminders_restart.py."""

from __future__ import annotations

import asyncio
import sqlite3

import pytest

from parla.daemon.reminders import ReminderScheduler
from parla.memory.store.protocol import ReminderRecords
from parla.memory.store.sqlite.store import SQLiteChatStore
from parla.memory.store.supabase.store import RetryPolicy
from parla.records.reminder import Reminder
from parla.records.turn import utcnow
from tests.conftest import copied_store, eventually, send_queued, signed_in_store

pytestmark = pytest.mark.tier("postgres")

STALE_S = 300.0  # no claim here gets that old: each device says again only its own


def scheduler(store: ReminderRecords, said: list[str], *, cut: bool = False) -> ReminderScheduler:
    """The laptop's scheduler; with `cut`, each saying starts and never ends (the stop cuts it)."""

    async def say(reminder: Reminder, words: str) -> None:
        said.append(words)
        if cut:
            await asyncio.Event().wait()

    return ReminderScheduler(store, "laptop", say, asyncio.Event(), handoff_s=10, takeover_s=STALE_S, recheck_s=0.5)


def due_now(text: str) -> Reminder:
    return Reminder(text=text, due_at=utcnow(), device="laptop")


async def all_marked(store: ReminderRecords) -> None:
    """Until the laptop's reminders are all marked said (the mark follows the saying)."""

    async def none_unsaid() -> bool:
        return await store.unsaid_reminders("laptop", STALE_S) == []

    await eventually(none_unsaid, timeout=5, what="the reminders marked said")


async def test_cut_off_on_supabase_it_is_said_again_by_the_next_start_then_never(supabase, tmp_path):
    said: list[str] = []
    async with copied_store(supabase, tmp_path) as store:
        r = await store.add_reminder(due_now("the oven"))
        async with scheduler(store, said, cut=True):
            await eventually(lambda: said, timeout=5, what="the saying begun")
        (held,) = await store.remote.unsaid_reminders("laptop", STALE_S)  # claimed on the server, not said
        assert held.id == r.id
        async with scheduler(store, said) as again:  # the next start
            await eventually(lambda: len(said) == 2, timeout=5, what="the reminder said again")
            await all_marked(store)
            await asyncio.sleep(1.2)  # reads after it: said once
        assert said == ["Reminder: the oven"] * 2 and again.said == 1
        assert await store.remote.unsaid_reminders("laptop", STALE_S) == []
        (stored,) = await store.remote.list_reminders(history=True)
        assert stored.said_at is not None and stored.claimed_by == "laptop"
        async with scheduler(store, said):
            await asyncio.sleep(1.2)
        assert len(said) == 2


async def test_while_supabase_is_away_a_cut_off_one_is_said_again_and_its_mark_sent_later(supabase, tmp_path):
    said: list[str] = []
    async with copied_store(supabase, tmp_path, recheck_s=60) as store:
        r = await store.add_reminder(due_now("the bus"))
        supabase.shim.refuse()
        async with scheduler(store, said, cut=True):  # claimed in the copy
            await eventually(lambda: said, timeout=5, what="the saying begun")
        async with scheduler(store, said):  # a start while still away: from the copy
            await eventually(lambda: len(said) == 2, timeout=5, what="the reminder said again")
            await all_marked(store)  # in the copy
            await asyncio.sleep(1.2)
        async with scheduler(store, said):  # said whole: the copy knows, though the server does not
            await asyncio.sleep(1.2)
        assert said == ["Reminder: the bus"] * 2
        supabase.shim.recover()
        await send_queued(store)  # the mark, queued: it claims the reminder the server still held pending
        (stored,) = await store.remote.list_reminders(history=True)
        assert (stored.id, stored.state, stored.claimed_by) == (r.id, "fired", "laptop")
        assert stored.said_at is not None


@pytest.mark.tier("fast")
async def test_a_mark_the_store_refused_is_written_at_the_next_read_and_not_said_again(tmp_path):
    said: list[str] = []
    path = tmp_path / "parla.db"
    async with SQLiteChatStore(path) as store:
        await store.add_reminder(due_now("the laundry"))
        with sqlite3.connect(path) as raw:  # a fault in the file: marks are refused
            raw.execute(
                "CREATE TRIGGER refuse_marks BEFORE UPDATE OF said_at ON reminders "
                "BEGIN SELECT RAISE(ABORT, 'disk says no'); END"
            )
        async with scheduler(store, said) as running:
            await eventually(lambda: said, timeout=5, what="the reminder said")
            await asyncio.sleep(0.8)  # a read after the saying: the mark refused again
            assert [r.text for r in await store.unsaid_reminders("laptop", STALE_S)] == ["the laundry"]
            with sqlite3.connect(path) as raw:
                raw.execute("DROP TRIGGER refuse_marks")
            await all_marked(store)  # at a later read
            assert running.said == 1
        assert said == ["Reminder: the laundry"]


async def test_a_failed_read_of_the_cut_off_ones_does_not_keep_a_reminder_claimed_now_from_being_said(
    supabase, tmp_path
):
    """Supabase answers the claim and then fails the read of the cut-off reminders: the reminder
    claimed at its time is said all the same, first, and the cut-off one once the read answers."""
    said: list[str] = []
    async with await signed_in_store(supabase, tmp_path) as store:
        store.retry = RetryPolicy(attempts=1, delay=0.05, max_delay=0.2)
        cut = await store.add_reminder(due_now("cut off before"))
        await store.claim_reminder(cut.id, "laptop")  # and the daemon was killed while it said it
        await store.add_reminder(due_now("due now"))
        supabase.shim.faults.next("/rest/v1/rpc/unsaid_reminders", "503", times=2)
        async with scheduler(store, said):
            await eventually(lambda: len(said) == 2, timeout=10, what="both said")
            await all_marked(store)
        assert said == ["Reminder: due now", "Reminder: cut off before"]
        assert supabase.shim.faults.injected["503"] == 2


@pytest.mark.tier("fast")
async def test_a_saying_that_failed_is_not_tried_again_by_that_daemon_but_by_the_next_start(tmp_path):
    """A broken speaker: the daemon that failed does not try again every read (it would fail
    again); the reminder is not marked said, so the next start says it."""
    said: list[str] = []

    async def broken(reminder: Reminder, words: str) -> None:
        said.append(words)
        raise OSError("the sound card is gone")

    async with SQLiteChatStore(tmp_path / "parla.db") as store:
        await store.add_reminder(due_now("the parcel"))
        async with ReminderScheduler(
            store, "laptop", broken, asyncio.Event(), handoff_s=10, takeover_s=STALE_S, recheck_s=0.3
        ):
            await eventually(lambda: said, timeout=5, what="the saying tried")
            await asyncio.sleep(1.0)  # reads after it
        assert len(said) == 1
        assert [r.text for r in await store.unsaid_reminders("laptop", STALE_S)] == ["the parcel"]
        async with scheduler(store, said):  # the next start, with the speaker back
            await eventually(lambda: len(said) == 2, timeout=5, what="the reminder said at the next start")
            await all_marked(store)
