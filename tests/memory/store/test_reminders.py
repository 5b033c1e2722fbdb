"""The reminders contract on every store (SQLite, Supabase through the peer, Supabase with this
device's copy): kept with every field, pending ones soonest first, a state that moves once, and a
claim that exactly one of many concurrent claimers wins."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from zoneinfo import ZoneInfo

import pytest

from parla.memory.errors import StoreError, WriteQueued
from parla.memory.reminders import Reminder
from parla.memory.store.sqlite import SQLiteChatStore
from parla.memory.turn import new_id
from tests.conftest import T0, copied_store
from tests.memory.store.test_supabase import rest, token_of, two_users


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
        assert await store.flush() == 1
        assert [x.id for x in await store.remote.list_reminders()] == [r.id]  # on the server now


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
