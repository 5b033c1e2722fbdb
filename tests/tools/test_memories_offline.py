"""The memory tools while the Supabase store does not answer (the peer's network cut with
`refuse()`, brought back with `recover()`): every write the user asks for is kept and answered at
once, reads come from this device's copy, and all of it reaches the server, in order, once it is back."""

from __future__ import annotations

import pytest

from parla.memory.compaction.compactor import Compactor
from parla.tools.memories import ForgetArgs, RecallArgs, RememberArgs
from tests.conftest import copied_store
from tests.tools.test_chats import Session
from tests.tools.test_chats_offline import PAPERS, chat_about
from tests.tools.test_memories import memory_tools

pytestmark = pytest.mark.tier("postgres")


async def test_with_the_store_away_each_tool_answers_at_once_and_every_write_arrives(
    supabase, tmp_path, embedder, summarizer, config
):
    async with copied_store(supabase, tmp_path) as store:
        compactor = Compactor(store, summarizer, embedder, config)
        papers = await chat_about(store, compactor, "Travel papers", PAPERS)
        tools = memory_tools(store, embedder, config, Session(papers))
        supabase.shim.refuse()

        pinned = await tools.remember(RememberArgs(fact="My passport expires in May", importance=8))
        assert pinned["result"] == "remembered" and pinned["queued"]
        recalled = await tools.recall(RecallArgs(query="when does my passport expire"))
        assert any("expires in May" in m["text"] for m in recalled["matches"]) and recalled["offline"]
        forgot = await tools.forget(ForgetArgs(item="My passport expires in May"))
        assert (forgot["result"], forgot["queued"], forgot["offline"]) == ("forgotten", True, True)
        known = await tools.remember(RememberArgs(fact="I am allergic to penicillin", about_user=True, about="allergy"))
        assert (known["known_in"], known["queued"]) == ("every chat", True)  # in the profile, not a pin
        assert (await store.pending_writes()).waiting == 3

        supabase.shim.recover()
        await store.flush()
        remote = store.remote
        assert [p.content for p in await remote.list_pins(papers, forgotten=True)] == ["My passport expires in May"]
        assert (known["profile_id"], known["fact"]) in [(e.id, e.content) for e in await remote.list_profile()]
        assert await store.pending_writes() == (await remote.pending_writes()) and not store.offline
