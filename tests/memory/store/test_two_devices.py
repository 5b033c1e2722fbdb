"""Two devices of one user on one Supabase database (two PostgREST shims over it, so one device's
network can be cut while the other's stays), each with its local copy: what one did offline meets
what the other did meanwhile by the rules docs/guides/supabase.md states. Nothing said is
dropped by a rule."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from datetime import timedelta

import pytest

from parla.memory.errors import WriteQueued
from parla.memory.store.local_copy import LocalCopyStore
from parla.memory.store.sqlite.store import SQLiteChatStore
from parla.memory.store.supabase.session import sign_in
from parla.memory.store.supabase.store import RetryPolicy, SupabaseChatStore
from parla.records.pins import Pin
from parla.records.profile import ProfileEntry
from tests.conftest import T0, make_turns, send_queued
from tests.peers.postgrest import ANON_KEY, PostgrestShim

pytestmark = pytest.mark.tier("postgres")

EMAIL, PASSWORD = "ada@example.com", "correct horse"


@pytest.fixture
def shims(supabase) -> Iterator[tuple[PostgrestShim, PostgrestShim]]:
    """The laptop's way to the database and the desktop's."""
    supabase.shim.create_user(EMAIL, PASSWORD)
    with PostgrestShim(supabase.dsn) as desktop:
        yield supabase.shim, desktop


@asynccontextmanager
async def device(shim: PostgrestShim, tmp_path, name: str) -> AsyncIterator[LocalCopyStore]:
    session = tmp_path / f"session-{name}.json"
    await sign_in(shim.url, ANON_KEY, EMAIL, PASSWORD, session)
    remote = await SupabaseChatStore.connect(
        shim.url,
        ANON_KEY,
        outbox_path=tmp_path / f"outbox-{name}.db",
        session_file=session,
        retry=RetryPolicy(attempts=1, delay=0.05, max_delay=0.2),
    )
    async with remote, SQLiteChatStore(tmp_path / f"copy-{name}.db") as copy:
        yield LocalCopyStore(remote, copy)


@asynccontextmanager
async def two_devices(shims, tmp_path) -> AsyncIterator[tuple[LocalCopyStore, LocalCopyStore, str]]:
    """The laptop and the desktop, both holding one chat the laptop started."""
    async with device(shims[0], tmp_path, "laptop") as laptop, device(shims[1], tmp_path, "desktop") as desktop:
        chat = (await laptop.create_chat(title="Japan", turns=make_turns(2))).chat
        await desktop.load_memory(chat.id)  # the desktop went to it once: its copy holds it
        yield laptop, desktop, chat.id


async def test_a_rename_on_both_devices_the_one_that_reaches_the_store_last_wins(shims, tmp_path):
    async with two_devices(shims, tmp_path) as (laptop, desktop, chat_id):
        shims[1].refuse()
        with pytest.raises(WriteQueued):
            await desktop.rename_chat(chat_id, "Kyoto and Nara")
        await laptop.rename_chat(chat_id, "Japan trip")
        assert (await desktop.get_chat(chat_id)).title == "Kyoto and Nara"  # offline: its own copy
        shims[1].recover()
        await desktop.flush()
        assert (await laptop.get_chat(chat_id)).title == "Kyoto and Nara"
        await laptop.list_chats()  # the next listing brings the laptop's copy up to date
        assert (await laptop.local.get_chat(chat_id)).title == "Kyoto and Nara"


async def test_a_pin_on_one_and_a_forget_on_the_other_both_hold(shims, tmp_path):
    async with two_devices(shims, tmp_path) as (laptop, desktop, chat_id):
        pin = await laptop.add_pin(Pin(chat_id=chat_id, content="My passport expires in May", importance=6))
        assert [p.id for p in await desktop.list_pins(chat_id)] == [pin.id]
        shims[1].refuse()
        with pytest.raises(WriteQueued):
            await desktop.set_pin_forgotten(pin.id, True)
        assert await desktop.list_pins(chat_id) == []  # forgotten in its copy at once
        await laptop.add_pin(pin.model_copy(update={"importance": 9}))  # meanwhile: edited on the laptop
        renewal = await laptop.add_pin(Pin(chat_id=chat_id, content="My passport expires in May; renewal booked"))
        shims[1].recover()
        await desktop.flush()
        (forgotten,) = await laptop.list_pins(chat_id, forgotten=True)
        assert (forgotten.id, forgotten.importance) == (pin.id, 9)  # the forget holds, and so does the edit
        assert [p.id for p in await laptop.list_pins(chat_id)] == [renewal.id]  # a later pin is another pin


async def test_a_chat_deleted_on_one_and_talked_in_on_the_other_comes_back_with_what_was_said(shims, tmp_path):
    async with two_devices(shims, tmp_path) as (laptop, desktop, chat_id):
        shims[1].refuse()
        said = make_turns(2, start=2)
        with pytest.raises(WriteQueued):
            await desktop.append_turns(chat_id, said)
        await laptop.delete_chat(chat_id)
        shims[1].recover()
        await send_queued(desktop)
        history = await laptop.load_history(chat_id)
        assert [t.id for t in history.full_history] == [t.id for t in said]  # what was said after the delete
        assert (await desktop.pending_writes()).refused == 0


async def test_a_chat_made_while_away_reaches_the_store_with_its_first_turns_in_one_write(shims, tmp_path):
    """A new chat and what is said in it, queued while away, arrive together: no other device ever
    sees the chat without its first turns (a write half applied)."""
    async with device(shims[0], tmp_path, "laptop") as laptop:
        shims[0].refuse()
        with pytest.raises(WriteQueued):
            await laptop.create_chat(chat_id="3f2a1c4e-0000-4000-8000-000000000001", title="Dinner")
        said = make_turns(2)
        with pytest.raises(WriteQueued):
            await laptop.append_turns("3f2a1c4e-0000-4000-8000-000000000001", said)
        before = dict(shims[0].faults.requests)  # none reach it while it refuses connections
        shims[0].recover()
        await send_queued(laptop)
        sent = {
            path: n - before.get(path, 0) for path, n in shims[0].faults.requests.items() if n != before.get(path, 0)
        }
        assert sent == {"/rest/v1/rpc/create_chat": 1}, sent
        history = await laptop.load_history("3f2a1c4e-0000-4000-8000-000000000001")
        assert [t.id for t in history.full_history] == [t.id for t in said]


async def test_the_profile_one_device_learned_is_known_on_the_other_when_it_goes_offline(shims, tmp_path):
    """What the laptop added, corrected and forgot in the profile reaches the desktop's copy the
    next time the desktop reads the profile, so a chat it opens offline still knows the user."""
    async with two_devices(shims, tmp_path) as (laptop, desktop, _):
        turin = ProfileEntry(content="I live in Turin.", subject="home", said_at=T0)
        dentist = ProfileEntry(content="My dentist is Dr Rossi.")
        await laptop.save_profile([turin, dentist])
        assert {e.id for e in await desktop.list_profile()} == {turin.id, dentist.id}
        milan = ProfileEntry(content="I moved to Milan.", subject="home", said_at=T0 + timedelta(days=30))
        await laptop.save_profile([milan])
        await laptop.set_profile_forgotten(dentist.id, True)
        await laptop.save_profile([ProfileEntry(content="My son is called Luca.", importance=8)])
        online = await desktop.list_profile()
        shims[1].refuse()
        offline = await desktop.list_profile()
        assert desktop.offline and [e.content for e in offline] == [e.content for e in online]
        assert {e.content for e in offline} == {"My son is called Luca.", "I moved to Milan."}
        history = {e.id: e for e in await desktop.list_profile(history=True)}
        assert history[turin.id].superseded_by == milan.id and history[dentist.id].forgotten_at is not None
