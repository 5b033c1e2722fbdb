"""The chat tools: switch_chat (by meaning or by id), new_chat, list_chats, rename_chat and
delete_chat. Each answers the model with what happened and, where the model has to say something,
what to say.

delete_chat acts only on a second call that carries the confirmation the first one issued, after the
user said yes (Parla saw a user turn after the question: tools.confirmations); the confirmation
names one chat, is used once and lapses after `delete_confirm_s`. The chat the conversation is in is
never deleted: the model is told to move out first (new_chat or
switch_chat), and to delete once the move is done, since the turns said before the move are still
being stored in that chat.

When the store's server is away, new_chat, rename_chat and delete_chat are kept in the outbox and
answered at once, marked `queued`, and switch_chat and list_chats read this device's copy
(tools.answers). A new chat's id is chosen here, so the conversation moves into it at once."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol

from pydantic import BaseModel, Field, model_validator

from parla.memory.config import MemoryConfig
from parla.memory.errors import ChatNotFound
from parla.memory.retrieval.search import ChatSearch
from parla.memory.retrieval.turn_windows import rename_chat
from parla.memory.store.protocol import IndexedChats, StoreState
from parla.records.chat import storable_title
from parla.records.embedding import Embedder
from parla.records.turn import new_id

from .answers import from_copy, kept, spoken_when
from .confirmations import UNANSWERED, Confirmations, Dialogue
from .errors import ToolError
from .registry import Tool


class ChatSession(Protocol):
    """The conversation as the tools see it: which chat it is in, and how to move it."""

    @property
    def chat_id(self) -> str: ...

    @property
    def switching(self) -> bool:
        """A move asked for has not happened yet (it does once the current turn is over)."""
        ...

    def switch(self, chat_id: str) -> None:
        """Carry on in `chat_id` once the current turn is over; the chat left is summarised in
        the background."""
        ...


class ChatToolStore(IndexedChats, StoreState, Protocol):
    """What the chat tools use of the store: the chats, the index (a new title is searchable at
    once) and whether the server answers."""


def _chat_card(chat_id: str, title: str | None, last: datetime) -> dict[str, Any]:
    return {"chat_id": chat_id, "title": title or "(untitled)", "last_talked": spoken_when(last)}


class SwitchArgs(BaseModel):
    query: str | None = Field(None, description="What the chat was about, in the user's words (e.g. 'the Japan trip').")
    chat_id: str | None = Field(None, description="A chat_id from the candidates of an earlier switch_chat.")

    @model_validator(mode="after")
    def _one(self) -> SwitchArgs:
        if bool(self.query and self.query.strip()) == bool(self.chat_id):
            raise ValueError("give either query (what the chat was about) or chat_id, not both and not neither")
        return self


class NewChatArgs(BaseModel):
    topic: str | None = Field(None, description="What the new chat is about, if the user said.")


class ListChatsArgs(BaseModel):
    limit: int = Field(5, ge=1, le=20, description="How many recent chats.")


class RenameArgs(BaseModel):
    title: str = Field(min_length=1, max_length=120, description="The new title of the current chat.")


class DeleteChatArgs(BaseModel):
    chat_id: str = Field(
        min_length=1, description="The chat_id of the chat to delete (from list_chats or switch_chat)."
    )
    confirmation: str | None = Field(
        None, description="The confirmation a first delete_chat call returned; only once the user said yes."
    )


class ChatTools:
    def __init__(
        self,
        store: ChatToolStore,
        search: ChatSearch,
        embedder: Embedder,
        session: ChatSession,
        config: MemoryConfig,
        confirmations: Confirmations | None = None,
    ) -> None:
        """`confirmations`: the live session's (None: no conversation tells them of a user turn,
        so nothing is ever confirmed)."""
        self.store = store
        self.search = search
        self.embedder = embedder
        self.session = session
        self._confirmations = confirmations or Confirmations(config.delete_confirm_s, Dialogue())

    def tools(self) -> list[Tool]:
        return [
            Tool(
                "switch_chat",
                "Go to another chat when the user asks to (e.g. 'switch to the chat about the Japan trip'). "
                "Pass the user's description as query, or a chat_id the user picked from candidates. "
                "On 'switching', tell the user in one short sentence; on 'ambiguous', ask which candidate; "
                "on 'none', say so and offer to start a new chat on that topic.",
                SwitchArgs,
                self.switch_chat,
            ),
            Tool(
                "new_chat",
                "Start a new chat when the user wants to talk about something new; the current chat is kept.",
                NewChatArgs,
                self.new_chat,
            ),
            Tool(
                "list_chats",
                "The user's recent chats with their titles and when they were last used.",
                ListChatsArgs,
                self.list_chats,
            ),
            Tool("rename_chat", "Give the current chat a new title the user chose.", RenameArgs, self.rename_chat),
            Tool(
                "delete_chat",
                "Delete a chat for good when the user asks to. The first call (chat_id only) returns a "
                "confirmation: ask the user whether to delete that chat, and only if they say yes call again "
                "with the confirmation. The chat you are in cannot be deleted: offer to move out first.",
                DeleteChatArgs,
                self.delete_chat,
            ),
        ]

    def _switch(self, chat_id: str, title: str | None, last: datetime) -> dict[str, Any]:
        card = _chat_card(chat_id, title, last)
        if chat_id == self.session.chat_id:
            return {"result": "already_here", **card, "say": f"We are already in {card['title']}."}
        self.session.switch(chat_id)
        return {
            "result": "switching",
            **card,
            "say": f"Switching to {card['title']}, last talked {card['last_talked']}.",
        }

    async def switch_chat(self, args: SwitchArgs) -> dict[str, Any]:
        return {**await self._switch_chat(args), **await from_copy(self.store)}

    async def _switch_chat(self, args: SwitchArgs) -> dict[str, Any]:
        if args.chat_id:
            chats = await self.store.find_chats(args.chat_id)
            if len(chats) != 1:
                raise ToolError(f"no single chat has the id {args.chat_id!r}; search by what it was about instead")
            return self._switch(chats[0].id, chats[0].title, chats[0].last_activity_at)
        assert args.query is not None
        result = await self.search.search(args.query, limit=5)
        if result.decision == "switch":
            # the search row carries the title and date: no further request before the chat's memory is loaded
            winner = result.candidates[0]
            return self._switch(winner.chat_id, winner.title, winner.last_activity_at)
        if result.decision == "ambiguous":
            return {
                "result": "ambiguous",
                "candidates": [_chat_card(c.chat_id, c.title, c.last_activity_at) for c in result.candidates],
                "say": "Ask the user which of these chats they mean, then call switch_chat with its chat_id.",
            }
        return {
            "result": "none",
            "say": f"No chat is about {args.query!r}. Offer to start a new chat about it (new_chat).",
        }

    async def new_chat(self, args: NewChatArgs) -> dict[str, Any]:
        topic = args.topic.strip() if args.topic else None
        chat_id = new_id()
        title = storable_title(topic or None, chat_id)
        _, queued = await kept(self.store.create_chat(chat_id=chat_id, title=title), None)
        self.session.switch(chat_id)
        return {
            "result": "switching",
            "chat_id": chat_id,
            "title": title or "(untitled)",
            "say": "A new chat is open.",
            **queued,
        }

    async def list_chats(self, args: ListChatsArgs) -> dict[str, Any]:
        chats = await self.store.list_chats(limit=args.limit)
        return {
            "chats": [
                {**_chat_card(c.id, c.title, c.last_activity_at), "current": c.id == self.session.chat_id}
                for c in chats
            ],
            **await from_copy(self.store),
        }

    async def rename_chat(self, args: RenameArgs) -> dict[str, Any]:
        title = args.title.strip()
        renamed, queued = await kept(rename_chat(self.store, self.embedder, self.session.chat_id, title), None)
        shown = renamed.title if renamed else storable_title(title, self.session.chat_id)
        return {"result": "renamed", "title": shown, **queued}

    async def delete_chat(self, args: DeleteChatArgs) -> dict[str, Any]:
        chats = await self.store.find_chats(args.chat_id)
        if len(chats) != 1:
            raise ToolError(f"no single chat has the id {args.chat_id!r}; find it with list_chats first")
        chat = chats[0]
        card = _chat_card(chat.id, chat.title, chat.last_activity_at)
        if chat.id == self.session.chat_id:
            return {
                "result": "in_this_chat",
                **card,
                "say": "We are in this chat: offer to start a new chat (new_chat) or go to another one "
                "(switch_chat) first, then delete it on the user's next turn.",
            }
        if self.session.switching:
            return {
                "result": "moving",
                **card,
                "say": "The move to the other chat ends with this answer: ask again on the user's next turn.",
            }
        taken = await self._confirmations.take(args.confirmation, chat.id)
        if taken != "taken":
            return {
                "result": "confirm",
                **card,
                "confirmation": self._confirmations.issue(chat.id),
                "say": (UNANSWERED if taken == "unanswered" else "")
                + f"Ask the user whether to delete {card['title']} (last talked {card['last_talked']}) for good. "
                "Only if they say yes, call delete_chat again with this chat_id and confirmation.",
            }
        queued: dict[str, Any] = {}
        try:
            _, queued = await kept(self.store.delete_chat(chat.id), None)
        except ChatNotFound:
            pass  # deleted meanwhile (from the CLI): what the user asked for is done
        return {"result": "deleted", "title": card["title"], "say": f"{card['title']} is deleted.", **queued}
