"""The Supabase store with this device's copy (`LocalCopyStore`) against the peer: once the store
was found away, reads go to the copy without trying it until `recheck_s` has passed or a write
reaches it, so a network that drops packets does not cost each read the request's timeout."""

from __future__ import annotations

from tests.conftest import copied_store, make_turns


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
