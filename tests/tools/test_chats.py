"""The chat tools against a real store and the offline embedder."""

from __future__ import annotations

import asyncio

import pytest

from parla.memory.retrieval.search import ChatSearch
from parla.records.chat import Chat
from parla.records.turn import Turn
from parla.tools.chats import ChatTools, DeleteChatArgs, ListChatsArgs, NewChatArgs, RenameArgs
from parla.tools.confirmations import Confirmations, Dialogue
from parla.tools.registry import ToolRegistry

pytestmark = pytest.mark.tier("fast")


class Session:
    """The conversation side of the tools: which chat, and the switches asked for."""

    def __init__(self, chat_id: str) -> None:
        self.chat_id = chat_id
        self.switches: list[str] = []
        self.switching = False  # a switch here happens at once

    def switch(self, chat_id: str) -> None:
        self.switches.append(chat_id)
        self.chat_id = chat_id


async def travel_papers(store, compactor) -> Chat:
    """A chat about a passport, compacted, with the conversation in it."""
    turns = [
        Turn.of("user", "My passport number ends in 4471 and expires in March 2027."),
        Turn.of("model", "Noted: passport ending 4471, valid until March 2027."),
    ]
    chat = (await store.create_chat(title="Travel papers", turns=turns)).chat
    await compactor.compact(chat.id)
    return chat


def answered(dialogue: Dialogue) -> None:
    """What the live session tells the dialogue when the model asks and the user answers."""
    dialogue.model_turn_ended()
    dialogue.user_turn_began()


async def setup(store, embedder, config, compactor):
    chat = await travel_papers(store, compactor)
    session = Session(chat.id)
    dialogue = Dialogue()
    confirmations = Confirmations(config.delete_confirm_s, dialogue, wait_s=0.05)
    tools = ChatTools(store, ChatSearch(store, embedder, config), embedder, session, config, confirmations)
    return tools, session, chat, dialogue


async def test_rename_list_and_new_chat(store, embedder, config, compactor):
    tools, session, _chat, _dialogue = await setup(store, embedder, config, compactor)
    assert (await tools.rename_chat(RenameArgs(title="Passport and visas")))["title"] == "Passport and visas"
    new = await tools.new_chat(NewChatArgs(topic="Birthday party"))
    assert session.switches == [new["chat_id"]] and (await store.get_chat(new["chat_id"])).title == "Birthday party"
    listed = (await tools.list_chats(ListChatsArgs(limit=5)))["chats"]
    assert [(c["title"], c["current"]) for c in listed] == [("Birthday party", True), ("Passport and visas", False)]


async def test_delete_chat_asks_first_and_never_deletes_the_chat_the_user_is_in(store, embedder, config, compactor):
    tools, _session, chat, dialogue = await setup(store, embedder, config, compactor)
    registry = ToolRegistry(tools.tools())
    here = await registry.call("delete_chat", {"chat_id": chat.id})
    assert here["result"] == "in_this_chat" and (await store.get_chat(chat.id)).id == chat.id
    await tools.new_chat(NewChatArgs(topic="Somewhere else"))
    asked = await registry.call("delete_chat", {"chat_id": chat.id})
    assert asked["result"] == "confirm" and "Travel papers" in asked["say"]
    assert (await store.get_chat(chat.id)).id == chat.id  # asking deletes nothing
    wrong = await registry.call("delete_chat", {"chat_id": chat.id, "confirmation": "made-up"})
    assert wrong["result"] == "confirm" and wrong["confirmation"] != asked["confirmation"]
    other = (await store.create_chat(title="Keep me")).chat
    crossed = await registry.call("delete_chat", {"chat_id": other.id, "confirmation": asked["confirmation"]})
    assert crossed["result"] == "confirm"  # a confirmation is for the chat it was asked about
    # no user turn since the question: nothing is deleted, and the model is told to ask again
    unanswered = await registry.call("delete_chat", {"chat_id": chat.id, "confirmation": asked["confirmation"]})
    assert unanswered["result"] == "confirm" and "no answer from the user" in unanswered["say"]
    answered(dialogue)
    done = await registry.call("delete_chat", {"chat_id": chat.id, "confirmation": unanswered["confirmation"]})
    assert done["result"] == "deleted"
    assert [c.title for c in await store.list_chats()] == ["Keep me", "Somewhere else"]
    assert "error" in await registry.call("delete_chat", {"chat_id": chat.id, "confirmation": asked["confirmation"]})


async def test_a_delete_confirmation_is_used_once_and_lapses(store, embedder, config, compactor):
    tools, session, chat, dialogue = await setup(
        store, embedder, config.model_copy(update={"delete_confirm_s": 0.05}), compactor
    )
    session.chat_id = (await store.create_chat()).chat.id
    asked = await tools.delete_chat(DeleteChatArgs(chat_id=chat.id))
    answered(dialogue)
    await asyncio.sleep(0.1)
    late = await tools.delete_chat(DeleteChatArgs(chat_id=chat.id, confirmation=asked["confirmation"]))
    assert late["result"] == "confirm" and (await store.get_chat(chat.id)).id == chat.id
    session.switching = True  # the user's words before a move are still being stored in the chat left
    moving = await tools.delete_chat(DeleteChatArgs(chat_id=chat.id, confirmation=late["confirmation"]))
    assert moving["result"] == "moving" and (await store.get_chat(chat.id)).id == chat.id
