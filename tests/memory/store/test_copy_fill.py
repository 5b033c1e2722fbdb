"""The fill of this device's copy (memory/store/copy_fill.py) on the Supabase store of the PostgREST
shim over real Postgres: every chat another device wrote comes into the copy (row, turns in pages,
pins) and is read from it while Supabase is away; a fill stopped midway resumes where it stood,
asking nothing again for what it copied; the time of the last complete fill outlives the process."""

from __future__ import annotations

import asyncio
import stat

import pytest

from parla.memory.store.copy_fill import CopyFill, filled_marker
from parla.memory.store.local_copy import LocalCopyStore
from parla.memory.store.sqlite.store import SQLiteChatStore
from parla.memory.store.supabase.session import sign_in
from parla.memory.store.supabase.store import RetryPolicy, SupabaseChatStore
from parla.records.pins import Pin
from parla.records.turn import Turn
from tests.conftest import eventually, make_turns

pytestmark = pytest.mark.tier("postgres")

EMAIL, PASSWORD = "ada@example.com", "correct horse"


async def device(peer, folder) -> SupabaseChatStore:
    """The user's store as one more device signs in to it."""
    folder.mkdir(exist_ok=True)
    await sign_in(peer.url, peer.anon_key, EMAIL, PASSWORD, folder / "session.json")
    store = await SupabaseChatStore.connect(
        peer.url, peer.anon_key, outbox_path=folder / "parla.db", session_file=folder / "session.json"
    )
    store.retry = RetryPolicy(attempts=1, delay=0.05, max_delay=0.2)
    return store


async def test_a_fill_brings_every_chat_and_resumes_where_it_was_stopped(supabase, tmp_path):
    supabase.shim.create_user(EMAIL, PASSWORD)
    async with await device(supabase, tmp_path / "laptop") as laptop:
        short = [(await laptop.create_chat(title=f"Errand {n}", turns=make_turns(3))).chat for n in range(5)]
        await laptop.add_pin(Pin(chat_id=short[0].id, content="The locker code is 4711"))
        ferry = [*make_turns(24), Turn.of("user", "The ferry to Miyajima leaves at seven.")]
        long = (await laptop.create_chat(title="Long evening", turns=ferry)).chat
    marker = filled_marker(tmp_path / "copy.db")
    loads = supabase.shim.faults.requests
    async with (
        await device(supabase, tmp_path / "phone") as remote,
        SQLiteChatStore(tmp_path / "copy.db") as local,
    ):
        copy = LocalCopyStore(remote, local)
        fill = CopyFill(copy, marker, every_s=0, pause_s=0.3, page=10)
        first = asyncio.create_task(fill.fill())
        await eventually(lambda: fill.progress.chats_done >= 3, timeout=20, what="three chats filled")
        first.cancel()  # the daemon stops midway
        with pytest.raises(asyncio.CancelledError):
            await first
        assert fill.progress.filled_at is None and not marker.exists()
        done_then = fill.progress.chats_done
        before = loads["/rest/v1/rpc/load_chat"]
        copied = await fill.fill()
        # the chats filled before the stop are not asked for again (each short chat is one request)
        assert 6 - done_then - 1 <= copied <= 6 - done_then
        assert loads["/rest/v1/rpc/load_chat"] - before == copied
        assert (fill.progress.state, fill.progress.chats_done, fill.progress.chats_total) == ("done", 6, 6)
        assert await fill.fill() == 0  # a round over a full copy copies nothing

        supabase.shim.refuse()  # read from the copy now
        held = {c.id: c for c in await copy.list_chats(limit=50)}
        assert copy.offline and set(held) == {c.id for c in [*short, long]}
        assert [t.seq for t in await copy.load_turns(long.id)] == list(range(1, 26))
        assert [p.content for p in await copy.list_pins(short[0].id)] == ["The locker code is 4711"]
        found = await copy.search_words(["ferry", "miyajima"], 5)
        assert {m.chat_id for m in found} == {long.id}
        supabase.shim.recover()
    assert stat.S_IMODE(marker.stat().st_mode) == 0o600
    async with (
        await device(supabase, tmp_path / "phone") as remote,
        SQLiteChatStore(tmp_path / "copy.db") as local,
    ):  # the next start knows when the copy was last filled
        again = CopyFill(LocalCopyStore(remote, local), marker, every_s=0, pause_s=0, page=10)
        assert again.progress.filled_at == fill.progress.filled_at
