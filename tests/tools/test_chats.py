"""The chat tools against a real store and the offline embedder."""

from __future__ import annotations

from datetime import timedelta

from memory.search import ChatSearch
from memory.turn import Turn, utcnow
from tools.chats import ChatTools, ListChatsArgs, NewChatArgs, RecallArgs, RememberArgs, RenameArgs, spoken_when


class Session:
    """The conversation side of the tools: which chat, and the switches asked for."""

    def __init__(self, chat_id: str) -> None:
        self.chat_id = chat_id
        self.switches: list[str] = []

    def switch(self, chat_id: str) -> None:
        self.switches.append(chat_id)
        self.chat_id = chat_id


async def setup(store, embedder, config, compactor):
    turns = [
        Turn.of("user", "My passport number ends in 4471 and expires in March 2027."),
        Turn.of("model", "Noted: passport ending 4471, valid until March 2027."),
    ]
    chat = (await store.create_chat(title="Travel papers", turns=turns)).chat
    await compactor.compact(chat.id)
    session = Session(chat.id)
    return ChatTools(store, ChatSearch(store, embedder, config), embedder, session), session, chat


async def test_remember_recall_rename_list_and_new_chat(store, embedder, config, compactor):
    tools, session, chat = await setup(store, embedder, config, compactor)
    remembered = await tools.remember(RememberArgs(fact="The dog is called Miso", importance=8))
    assert remembered["result"] == "remembered"
    assert [(p.content, p.importance) for p in await store.list_pins(chat.id)] == [("The dog is called Miso", 8.0)]
    assert (await tools.recall(RecallArgs(query="what is the dog's name")))["matches"][
        0
    ] == "(pinned) The dog is called Miso"
    everywhere = await tools.recall(RecallArgs(query="passport expiry", all_chats=True))
    assert everywhere["matches"][0]["chat_id"] == chat.id
    assert (await tools.rename_chat(RenameArgs(title="Passport and visas")))["title"] == "Passport and visas"
    new = await tools.new_chat(NewChatArgs(topic="Birthday party"))
    assert session.switches == [new["chat_id"]] and (await store.get_chat(new["chat_id"])).title == "Birthday party"
    listed = (await tools.list_chats(ListChatsArgs(limit=5)))["chats"]
    assert [(c["title"], c["current"]) for c in listed] == [("Birthday party", True), ("Passport and visas", False)]


def test_spoken_when():
    now = utcnow()
    assert spoken_when(now, now) == "today"
    assert spoken_when(now - timedelta(days=1), now) == "yesterday"
    assert spoken_when(now - timedelta(days=3), now) == "3 days ago"
    assert spoken_when(now - timedelta(days=20), now) == "2 weeks ago"
    assert spoken_when(now.replace(year=2025, month=1, day=5), now) == "on 5 January 2025"
