"""The reminders contract on every store (SQLite, Supabase through the peer, Supabase with this
device's copy): kept with every field, pending ones soonest first, a state that moves once, a
claim that exactly one of many concurrent claimers wins, and a reminder that counts as said only
once its claimer marked it so (one cut off is among that device's unsaid ones until then)."""

from __future__ import annotations

import asyncio
import sqlite3
from datetime import timedelta
from zoneinfo import ZoneInfo

import psycopg
import pytest

from parla.memory.errors import StoreError, WriteQueued
from parla.memory.store.sqlite.schema import MIGRATIONS
from parla.memory.store.sqlite.store import SQLiteChatStore
from parla.memory.store.supabase.schema import SCHEMA_VERSION, apply_migrations, migrations
from parla.records.reminder import MAX_REMINDER_CHARS, Reminder
from parla.records.turn import new_id
from tests.conftest import T0, copied_store, send_queued, signed_in_store
from tests.memory.store.supabase.test_store import rest, token_of, two_users
from tests.memory.store.test_two_devices import device, shims  # noqa: F401 - the peers' fixture

pytestmark = pytest.mark.tier("fast")

STALE_S = 300.0  # older than any claim here: another device's is not taken up


def reminder(text: str, minutes: int, **fields) -> Reminder:
    return Reminder(text=text, due_at=T0 + timedelta(minutes=minutes), time_zone="Europe/Rome", **fields)


async def test_a_reminder_round_trips_with_every_field(any_store):
    chat = (await any_store.create_chat(title="dentist talk")).chat
    r = reminder("call my sister — ciao", 30, kind="timer", chat_id=chat.id, turn_id="t-1", device="laptop")
    assert await any_store.add_reminder(r) == r
    (listed,) = await any_store.list_reminders()
    assert listed == r
    assert listed.due_at.astimezone(ZoneInfo(listed.time_zone)).utcoffset() == timedelta(hours=1)  # Rome in November


async def test_adding_an_id_twice_keeps_the_first(any_store):
    r = reminder("first", 5)
    await any_store.add_reminder(r)
    again = await any_store.add_reminder(r.model_copy(update={"text": "second"}))
    assert again.text == "first"
    assert [x.text for x in await any_store.list_reminders()] == ["first"]


async def test_pending_soonest_first_history_newest_due_first(any_store):
    late, soon, middle = reminder("late", 90), reminder("soon", 10), reminder("middle", 40)
    for r in (late, soon, middle):
        await any_store.add_reminder(r)
    await any_store.cancel_reminder(middle.id)
    assert [r.text for r in await any_store.list_reminders()] == ["soon", "late"]
    assert [r.text for r in await any_store.list_reminders(history=True)] == ["late", "middle", "soon"]


async def test_cancel_moves_pending_once_and_an_unknown_id_is_refused(any_store):
    r = await any_store.add_reminder(reminder("dentist", 60))
    cancelled = await any_store.cancel_reminder(r.id)
    assert cancelled.state == "cancelled" and cancelled.cancelled_at is not None
    assert await any_store.claim_reminder(r.id, "laptop") is None  # a cancelled one is never said
    assert (await any_store.cancel_reminder(r.id)).cancelled_at == cancelled.cancelled_at
    with pytest.raises(StoreError, match="no reminder"):
        await any_store.cancel_reminder(new_id())


async def test_a_claim_is_won_once_and_names_the_device(any_store):
    r = await any_store.add_reminder(reminder("tea", 3, kind="timer"))
    claimed = await any_store.claim_reminder(r.id, "desktop")
    assert claimed is not None and claimed.state == "fired" and claimed.claimed_by == "desktop"
    assert claimed.fired_at is not None
    assert await any_store.claim_reminder(r.id, "laptop") is None
    assert (await any_store.cancel_reminder(r.id)).state == "fired"  # said already: nothing to cancel
    assert await any_store.list_reminders() == []
    assert await any_store.claim_reminder(new_id(), "laptop") is None


async def test_a_claimed_reminder_is_unsaid_for_its_claimer_until_marked_said_once(any_store):
    early, late = reminder("early", 1), reminder("late", 2)
    for r in (late, early):
        await any_store.add_reminder(r)
        assert (await any_store.claim_reminder(r.id, "laptop")).said_at is None
    assert [r.text for r in await any_store.unsaid_reminders("laptop", STALE_S)] == ["early", "late"]  # soonest first
    assert await any_store.unsaid_reminders("desktop", STALE_S) == []  # another device's claims are not its own
    assert await any_store.mark_reminder_said(early.id, "desktop") is None  # not the claimer
    said = await any_store.mark_reminder_said(early.id, "laptop")
    assert said is not None and said.said_at is not None and said.state == "fired" and said.claimed_by == "laptop"
    assert (await any_store.mark_reminder_said(early.id, "laptop")).said_at == said.said_at  # written once
    assert [r.text for r in await any_store.unsaid_reminders("laptop", STALE_S)] == ["late"]
    history = {r.text: r for r in await any_store.list_reminders(history=True)}
    assert history["early"].said_at == said.said_at and history["late"].said_at is None


async def test_marking_a_pending_reminder_said_claims_it_and_a_cancelled_one_is_refused(any_store):
    """A reminder claimed in a local copy while the server was away is still pending there: the
    mark sent later claims it for the device that said it."""
    r = await any_store.add_reminder(reminder("said offline", 1))
    said = await any_store.mark_reminder_said(r.id, "laptop")
    assert said is not None and (said.state, said.claimed_by) == ("fired", "laptop")
    assert said.fired_at is not None and said.said_at is not None
    assert await any_store.claim_reminder(r.id, "desktop") is None and await any_store.list_reminders() == []
    gone = await any_store.add_reminder(reminder("cancelled", 2))
    await any_store.cancel_reminder(gone.id)
    assert await any_store.mark_reminder_said(gone.id, "laptop") is None
    assert (await any_store.cancel_reminder(gone.id)).said_at is None
    assert await any_store.mark_reminder_said(new_id(), "laptop") is None
    assert await any_store.unsaid_reminders("laptop", STALE_S) == []


async def test_a_cut_off_claim_is_taken_up_by_its_device_at_once_and_by_another_only_once_stale(any_store):
    r = await any_store.add_reminder(reminder("pay the rent", 1))
    first = await any_store.claim_reminder(r.id, "laptop")
    assert await any_store.reclaim_reminder(r.id, "desktop", STALE_S) is None  # the laptop may be saying it
    again = await any_store.reclaim_reminder(r.id, "laptop", STALE_S)  # the laptop's next start
    assert again is not None and again.claimed_by == "laptop" and again.fired_at >= first.fired_at
    await asyncio.sleep(1.0)
    assert [x.id for x in await any_store.unsaid_reminders("desktop", 0.5)] == [r.id]  # stale now
    taken = await any_store.reclaim_reminder(r.id, "desktop", 0.5)  # the laptop never started again
    assert taken is not None and taken.claimed_by == "desktop" and taken.said_at is None
    assert await any_store.unsaid_reminders("laptop", STALE_S) == []  # the desktop's now
    assert await any_store.reclaim_reminder(r.id, "laptop", STALE_S) is None
    assert await any_store.mark_reminder_said(r.id, "laptop") is None
    assert (await any_store.mark_reminder_said(r.id, "desktop")).said_at is not None
    assert await any_store.reclaim_reminder(r.id, "desktop", 0.0) is None  # said: never taken up again
    assert await any_store.unsaid_reminders("desktop", 0.0) == []
    assert await any_store.reclaim_reminder(new_id(), "desktop", 0.0) is None


async def test_concurrent_takeovers_of_a_stale_claim_one_wins(any_store):
    r = await any_store.add_reminder(reminder("stale", 1))
    await any_store.claim_reminder(r.id, "laptop")
    await asyncio.sleep(2.0)
    # stale after 1.5 s: the winner's claim stays fresh for the others' conditions for that long
    results = await asyncio.gather(*(any_store.reclaim_reminder(r.id, f"device-{i}", 1.5) for i in range(6)))
    winners = [x for x in results if x is not None]
    assert len(winners) == 1
    (stored,) = await any_store.list_reminders(history=True)
    assert stored.claimed_by == winners[0].claimed_by


async def test_concurrent_claims_on_one_reminder_one_wins(any_store):
    r = await any_store.add_reminder(reminder("meeting", 1))
    results = await asyncio.gather(*(any_store.claim_reminder(r.id, f"device-{i}") for i in range(6)))
    winners = [x for x in results if x is not None]
    assert len(winners) == 1
    (stored,) = await any_store.list_reminders(history=True)
    assert stored.claimed_by == winners[0].claimed_by


async def test_two_sqlite_connections_on_one_file_claim_once(tmp_path):
    path = tmp_path / "parla.db"
    async with SQLiteChatStore(path) as a, SQLiteChatStore(path) as b:
        r = await a.add_reminder(reminder("shared file", 1))
        results = await asyncio.gather(a.claim_reminder(r.id, "a"), b.claim_reminder(r.id, "b"))
    assert sum(x is not None for x in results) == 1


def test_a_reminder_needs_an_aware_time_and_a_known_zone():
    with pytest.raises(ValueError, match="time zone"):
        Reminder(text="x", due_at=T0.replace(tzinfo=None))
    with pytest.raises(ValueError):
        Reminder(text="x", due_at=T0, time_zone="Mars/Olympus")


@pytest.mark.tier("postgres")
async def test_offline_a_reminder_waits_in_the_outbox_and_the_copy_lists_and_says_it(supabase, tmp_path):
    async with copied_store(supabase, tmp_path) as store:
        supabase.shim.refuse()
        r = reminder("set while away", 1)
        with pytest.raises(WriteQueued):
            await store.add_reminder(r)
        assert [x.id for x in await store.list_reminders()] == [r.id]  # from the copy
        claimed = await store.claim_reminder(r.id, "laptop")  # away: the copy's claim, said here
        assert claimed is not None and claimed.claimed_by == "laptop"
        supabase.shim.recover()
        await send_queued(store)
        assert [x.id for x in await store.remote.list_reminders()] == [r.id]  # on the server now


@pytest.mark.tier("postgres")
async def test_a_user_cannot_see_claim_or_cancel_another_users_reminder(supabase, tmp_path):
    a, b = await two_users(supabase, tmp_path)
    async with a, b:
        theirs = await b.add_reminder(reminder("B's secret", 5))
        assert await a.list_reminders(history=True) == []
        assert await a.claim_reminder(theirs.id, "a's laptop") is None
        with pytest.raises(StoreError, match="no reminder"):
            await a.cancel_reminder(theirs.id)
        with pytest.raises(StoreError):  # the id is B's: A cannot add over it either
            await a.add_reminder(theirs.model_copy(update={"text": "A's now"}))
        with rest(supabase, token_of(a)) as http:
            assert http.get("/reminders", params={"select": "*"}).json() == []
        assert (await b.list_reminders()) == [theirs]


@pytest.mark.tier("postgres")
async def test_offline_a_reminder_said_is_marked_in_the_copy_and_on_the_server_when_it_is_back(supabase, tmp_path):
    async with copied_store(supabase, tmp_path) as store:
        online, away = reminder("claimed online", 1), reminder("claimed away", 2)
        for r in (online, away):
            await store.add_reminder(r)
        assert await store.claim_reminder(online.id, "laptop") is not None
        supabase.shim.refuse()
        assert await store.claim_reminder(away.id, "laptop") is not None  # in the copy only
        for r in (online, away):
            with pytest.raises(WriteQueued):
                await store.mark_reminder_said(r.id, "laptop")
        assert await store.unsaid_reminders("laptop", STALE_S) == []  # from the copy: neither is said again here
        supabase.shim.recover()
        # the read sends the queued marks first: the server never lists them unsaid
        assert await store.remote.unsaid_reminders("laptop", STALE_S) == []
        said = {r.text: r for r in await store.remote.list_reminders(history=True)}
        assert {t: (r.state, r.claimed_by) for t, r in said.items()} == {
            "claimed online": ("fired", "laptop"),
            "claimed away": ("fired", "laptop"),
        }
        assert all(r.said_at is not None for r in said.values())


@pytest.mark.tier("postgres")
async def test_a_mark_said_on_another_device_reaches_the_copy(shims, tmp_path):  # noqa: F811
    async with device(shims[0], tmp_path, "laptop") as laptop, device(shims[1], tmp_path, "desktop") as desktop:
        r = await laptop.add_reminder(reminder("seen both ways", 1))
        await desktop.list_reminders()  # the desktop's copy holds it pending
        await laptop.claim_reminder(r.id, "laptop")
        await laptop.mark_reminder_said(r.id, "laptop")
        await desktop.list_reminders(history=True)
        (copied,) = await desktop.local.list_reminders(history=True)
        assert (copied.state, copied.claimed_by) == ("fired", "laptop") and copied.said_at is not None


async def test_sqlite_reminders_said_before_the_mark_existed_count_as_said(tmp_path):
    """A file from before the said mark: its fired reminders were said as far as anyone knows, so
    the upgrade does not say them all again."""
    path = tmp_path / "parla.db"
    async with SQLiteChatStore(path) as store:
        fired, pending = reminder("said last week", 1), reminder("to come", 90)
        for r in (fired, pending):
            await store.add_reminder(r)
        await store.claim_reminder(fired.id, "laptop")
    with sqlite3.connect(path) as raw:  # back to the version before the mark
        raw.executescript(
            f"DROP INDEX reminders_unsaid; ALTER TABLE reminders DROP COLUMN said_at; "
            f"PRAGMA user_version = {len(MIGRATIONS) - 1};"
        )
    async with SQLiteChatStore(path) as store:
        assert await store.unsaid_reminders("laptop", STALE_S) == []
        history = {r.text: r for r in await store.list_reminders(history=True)}
    assert history["said last week"].said_at == history["said last week"].fired_at is not None
    assert history["to come"].said_at is None and history["to come"].state == "pending"


@pytest.mark.tier("postgres")
async def test_supabase_reminders_said_before_the_mark_existed_count_as_said(supabase, pg_cluster, tmp_path):
    async with await signed_in_store(supabase, tmp_path) as store:
        fired, pending = reminder("said last week", 1), reminder("to come", 90)
        for r in (fired, pending):
            await store.add_reminder(r)
        await store.claim_reminder(fired.id, "laptop")
        (said,) = [m for m in migrations() if m.name == "parla_reminder_said"]
        name = psycopg.conninfo.conninfo_to_dict(supabase.dsn)["dbname"]
        with psycopg.connect(supabase.dsn, autocommit=True) as conn:
            conn.execute("alter table public.reminders drop column said_at cascade")
            conn.execute("delete from supabase_migrations.schema_migrations where version = %s", (said.version,))
            assert apply_migrations(pg_cluster.owner_dsn(name)) == [said]
            assert conn.execute("select public.parla_schema_version()").fetchone() == (SCHEMA_VERSION,)
        assert await store.unsaid_reminders("laptop", STALE_S) == []
        history = {r.text: r for r in await store.list_reminders(history=True)}
    assert history["said last week"].said_at == history["said last week"].fired_at is not None
    assert history["to come"].said_at is None and history["to come"].state == "pending"


LONG = "call my sister " * 70_000  # about 1 MB, set by a client that had no bound


@pytest.mark.tier("postgres")
async def test_a_reminder_row_too_long_is_cut_where_the_supabase_store_reads_it(supabase, tmp_path):
    """A row another client (or a Parla before the bound) wrote through the API: read whole, it went
    to the terminal, the page and the speech command (which failed: "Argument list too long")."""
    async with await signed_in_store(supabase, tmp_path) as store:
        row = reminder("x", 30).model_dump(mode="json", exclude={"text"}) | {"text": LONG}
        with rest(supabase, token_of(store)) as http:
            http.post("/rpc/add_reminder", json={"p_reminder": row}).raise_for_status()
        (listed,) = await store.list_reminders()
        (history,) = await store.list_reminders(history=True)
    for read in (listed, history):
        assert len(read.text) == MAX_REMINDER_CHARS and read.text.endswith("…")
        assert read.text.startswith("call my sister call my sister")


async def test_a_reminder_row_too_long_is_cut_where_the_sqlite_store_reads_it(tmp_path):
    path = tmp_path / "parla.db"
    async with SQLiteChatStore(path) as store:
        r = await store.add_reminder(reminder("x", 30))
    with sqlite3.connect(path) as raw:
        raw.execute("UPDATE reminders SET text = ? WHERE id = ?", (LONG, r.id))
    async with SQLiteChatStore(path) as store:
        (listed,) = await store.list_reminders()
    assert len(listed.text) == MAX_REMINDER_CHARS and listed.text.endswith("…")
