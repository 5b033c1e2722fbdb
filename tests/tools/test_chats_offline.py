"""The chat tools while the Supabase store does not answer (the peer's network cut with
`refuse()`, brought back with `recover()`): every write the user asks for is kept and answered at
once, reads come from this device's copy, and all of it reaches the server, in order, once it is back."""

from __future__ import annotations

import pytest

from parla.memory.compaction.compactor import Compactor
from parla.memory.errors import ChatNotFound, WriteQueued
from parla.memory.retrieval.search import ChatSearch
from parla.records.turn import Turn
from parla.tools.chats import ChatTools, DeleteChatArgs, ListChatsArgs, NewChatArgs, RenameArgs, SwitchArgs
from parla.tools.confirmations import Confirmations, Dialogue
from tests.conftest import copied_store
from tests.tools.test_chats import Session, answered

pytestmark = pytest.mark.tier("postgres")

PAPERS = [
    ("user", "My passport number ends in 4471 and expires in March 2027."),
    ("model", "Noted: passport ending 4471, valid until March 2027."),
]
GARDEN = [
    ("user", "The tomato seedlings on the balcony have yellow leaves after the cold night."),
    ("model", "Cold stress turns tomato leaves yellow; bring the seedlings inside at night."),
]


async def chat_about(store, compactor, title, said) -> str:
    chat = (await store.create_chat(title=title, turns=[Turn.of(r, t) for r, t in said])).chat
    await compactor.compact(chat.id)
    return chat.id


async def test_with_the_store_away_each_tool_answers_at_once_and_every_write_arrives(
    supabase, tmp_path, embedder, summarizer, config
):
    async with copied_store(supabase, tmp_path) as store:
        compactor = Compactor(store, summarizer, embedder, config)
        papers = await chat_about(store, compactor, "Travel papers", PAPERS)
        garden = await chat_about(store, compactor, "Balcony garden", GARDEN)
        session = Session(papers)
        dialogue = Dialogue()
        confirmations = Confirmations(config.delete_confirm_s, dialogue)
        tools = ChatTools(store, ChatSearch(store, embedder, config), embedder, session, config, confirmations)
        supabase.shim.refuse()

        listed = await tools.list_chats(ListChatsArgs(limit=5))
        assert {c["title"] for c in listed["chats"]} == {"Travel papers", "Balcony garden"} and listed["offline"]
        renamed = await tools.rename_chat(RenameArgs(title="Passport and visas"))
        assert renamed == {**renamed, "result": "renamed", "title": "Passport and visas", "queued": True}
        switched = await tools.switch_chat(SwitchArgs(query="the tomato seedlings with yellow leaves"))
        assert (switched["result"], switched["chat_id"], session.chat_id) == ("switching", garden, garden)
        assert switched["offline"]
        new = await tools.new_chat(NewChatArgs(topic="Birthday party"))
        assert new["queued"] and session.chat_id == new["chat_id"]  # the conversation is in it at once
        said = [Turn.of("user", "Anna turns forty on Saturday."), Turn.of("model", "Let us plan her party.")]
        with pytest.raises(WriteQueued):  # the session stores what was said there; it waits too
            await store.append_turns(new["chat_id"], said)
        assert [t.id for t in (await store.load_memory(new["chat_id"])).tail] == [t.id for t in said]
        asked = await tools.delete_chat(DeleteChatArgs(chat_id=garden))
        answered(dialogue)
        deleted = await tools.delete_chat(DeleteChatArgs(chat_id=garden, confirmation=asked["confirmation"]))
        assert (deleted["result"], deleted["queued"]) == ("deleted", True)
        assert garden not in {c["chat_id"] for c in (await tools.list_chats(ListChatsArgs(limit=5)))["chats"]}
        assert (await store.pending_writes()).waiting == 4

        supabase.shim.recover()
        await store.flush()
        remote = store.remote
        assert (await remote.get_chat(papers)).title == "Passport and visas"
        created = await remote.load_history(new["chat_id"])
        assert created.chat.title == "Birthday party" and [t.id for t in created.full_history] == [t.id for t in said]
        with pytest.raises(ChatNotFound):
            await remote.get_chat(garden)
        assert await store.pending_writes() == (await remote.pending_writes()) and not store.offline
