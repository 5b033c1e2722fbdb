"""The Supabase store with this device's copy (`LocalCopyStore`) against the peer: once the store
was found away, reads go to the copy without trying it until `recheck_s` has passed or a write
reaches it, so a network that drops packets does not cost each read the request's timeout."""

from __future__ import annotations

from datetime import timedelta

import pytest

from parla.memory.errors import WriteQueued
from parla.records.profile import ProfileEntry
from tests.conftest import T0, copied_store, make_turns, send_queued

pytestmark = pytest.mark.tier("postgres")


async def test_reads_skip_a_store_found_away_until_it_answers_again(supabase, tmp_path):
    async with copied_store(supabase, tmp_path, recheck_s=60.0) as store:
        chat = (await store.create_chat(title="Japan", turns=make_turns(2))).chat
        supabase.shim.refuse()
        assert [c.id for c in await store.list_chats()] == [chat.id] and store.offline
        supabase.shim.recover()
        asked = len(supabase.shim.log)
        assert (await store.load_memory(chat.id)).chat.title == "Japan"
        assert len(supabase.shim.log) == asked and store.offline  # answered by the copy alone
        await store.append_turns(chat.id, make_turns(2, start=2))  # a write reaches the store
        assert not store.offline
        assert (await store.get_chat(chat.id)).turn_count == 4 and len(supabase.shim.log) > asked + 1


async def test_profile_writes_made_while_the_store_is_away_are_kept_and_reach_it_when_it_is_back(supabase, tmp_path):
    """Add, edit, supersede and forget, all with Supabase stopped: each is applied to this device's
    copy at once, waits in the outbox, and reaches the store in order once it is restarted."""
    async with copied_store(supabase, tmp_path) as store:
        (kept,) = await store.save_profile([ProfileEntry(content="My dentist is Dr Rossi.", importance=6)])
        supabase.shim.refuse()
        turin = ProfileEntry(content="I live in Turin.", subject="home", said_at=T0)
        milan = ProfileEntry(content="I moved to Milan.", subject="home", said_at=T0 + timedelta(days=30))
        code = ProfileEntry(content="The gate code is 4512.", subject="gate code", importance=7)
        with pytest.raises(WriteQueued):
            await store.save_profile([turin, code])
        with pytest.raises(WriteQueued):
            await store.save_profile([milan])
        with pytest.raises(WriteQueued):
            await store.save_profile([code.model_copy(update={"content": "The gate code is 4513."})], edit=True)
        with pytest.raises(WriteQueued):
            await store.set_profile_forgotten(kept.id, True)
        offline = {e.content for e in await store.list_profile()}
        assert offline == {"I moved to Milan.", "The gate code is 4513."} and store.offline

        supabase.shim.recover()
        await send_queued(store)
        remote = await store.remote.list_profile(history=True)
        by_id = {e.id: e for e in remote}
        assert {e.content for e in remote if e.current} == offline
        assert by_id[turin.id].superseded_by == milan.id  # kept as history, with its own source
        assert by_id[kept.id].forgotten_at is not None
