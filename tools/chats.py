"""The chat tools: switch_chat (by meaning or by id), new_chat, list_chats, rename_chat, delete_chat,
and the memory tools remember, recall and forget. Each answers the model with what happened and, where
the model has to say something, what to say.

delete_chat acts only on a second call that carries the confirmation the first one issued, after the
user said yes; the confirmation names one chat, is used once and lapses after `delete_confirm_s`. The
chat the conversation is in is never deleted: the model is told to move out first (new_chat or
switch_chat), and to delete once the move is done, since the turns said before the move are still
being stored in that chat.

When the store's server is away, a write the user asks for (remember, new_chat, rename_chat, forget,
delete_chat) is kept in the store's outbox (`WriteQueued`) and the tool answers at once with what was
done, marked `queued`: the model tells the user it is done here and reaches their other devices once
the store answers again. A new chat's id is chosen here, so the conversation moves into it at once."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence
from datetime import datetime
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel, Field, model_validator

from parla.kernel.local_time import LocalClock
from parla.memory.config import MemoryConfig
from parla.memory.errors import ChatNotFound, WriteQueued
from parla.memory.forgetting import MemoryItem, memory_items, profile_items, set_forgotten
from parla.memory.language.absolute_dates import with_absolute_dates
from parla.memory.language.profile_rules import subject_of
from parla.memory.retrieval.recall import Recall
from parla.memory.retrieval.search import ChatSearch
from parla.memory.retrieval.turn_windows import rename_chat
from parla.memory.store.protocol import ChatStore
from parla.records.chat import storable_title
from parla.records.embedding import Embedder, similarities
from parla.records.pins import Pin
from parla.records.profile import ProfileEntry
from parla.records.turn import local_time, new_id, utcnow

from .confirmations import Confirmations
from .errors import ToolError
from .registry import Tool

T = TypeVar("T")


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


def spoken_when(moment: datetime, now: datetime | None = None) -> str:
    # Days as the user counts them, in their local time zone.
    days = (local_time(now or utcnow()).date() - local_time(moment).date()).days
    if days <= 0:
        return "today"
    if days == 1:
        return "yesterday"
    if days < 7:
        return f"{days} days ago"
    if days < 60:
        return f"{days // 7} weeks ago"
    return f"on {moment.day} {moment:%B %Y}"


# what a tool adds to its answer when the write waits in the outbox
_QUEUED = {
    "queued": True,
    "queued_note": "Done on this device; the store is unreachable, so it reaches the user's other devices once it is back.",
}


_FROM_COPY = {
    "offline": True,
    "offline_note": "The store is unreachable: this comes from this device's copy; chats added on other devices "
    "since it was last reached may be missing.",
}


async def _kept(write: Awaitable[T], done: T) -> tuple[T, dict[str, Any]]:
    """The write's result, or `done` (what it does) with the queued note when it waits in the outbox."""
    try:
        return await write, {}
    except WriteQueued:
        return done, _QUEUED


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


class RememberArgs(BaseModel):
    fact: str = Field(min_length=1, max_length=500, description="The fact to keep, as a short sentence.")
    importance: float = Field(5.0, ge=0, le=10, description="0-10; how much it matters (default 5).")
    about_user: bool = Field(
        False,
        description="True when the fact is about the user (who they are, people in their life, places, health, "
        "preferences, possessions, routines, plans with dates): it is then known in every chat. False for a fact "
        "that matters to this chat only.",
    )
    about: str | None = Field(
        None,
        max_length=60,
        description="What a fact about the user is about, in a few words ('home city', 'daughter name'): "
        "a newer fact about the same thing replaces the older one.",
    )


class RecallArgs(BaseModel):
    query: str = Field(
        min_length=1,
        description="What to look for, in the user's words; a date they name ('on 8 May 2023', 'last week') "
        "puts what was said then first.",
    )
    all_chats: bool = Field(False, description="Search every chat instead of only the current one.")


class DeleteChatArgs(BaseModel):
    chat_id: str = Field(
        min_length=1, description="The chat_id of the chat to delete (from list_chats or switch_chat)."
    )
    confirmation: str | None = Field(
        None, description="The confirmation a first delete_chat call returned; only once the user said yes."
    )


class ForgetArgs(BaseModel):
    item: str = Field(
        min_length=1, description="The pinned or remembered fact to forget, in the user's words or exactly as recalled."
    )


class ChatTools:
    def __init__(
        self,
        store: ChatStore,
        search: ChatSearch,
        embedder: Embedder,
        session: ChatSession,
        config: MemoryConfig,
        clock: LocalClock | None = None,
        date_languages: Sequence[str] = ("en",),
    ) -> None:
        """`clock` and `date_languages`: how relative dates in a fact to remember are read (the
        system's zone and English by default)."""
        self.store = store
        self.clock = clock or LocalClock()
        self.date_languages = tuple(date_languages)
        self.forget_margin = config.forget_margin
        self.search = search
        self.embedder = embedder
        self.session = session
        self.recaller = Recall(store, embedder, config)
        self._confirmations = Confirmations(config.delete_confirm_s)

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
                "remember",
                "Keep a fact the user asks you to remember. A fact about the user (about_user) is known in every "
                "chat from then on; any other fact is pinned in this chat's memory for good.",
                RememberArgs,
                self.remember,
            ),
            Tool(
                "recall",
                "Look up what was said or pinned about something, in this chat or (all_chats) in every chat, "
                "by meaning and by the words used: each match has its chat, the turns it comes from and its text.",
                RecallArgs,
                self.recall,
            ),
            Tool(
                "delete_chat",
                "Delete a chat for good when the user asks to. The first call (chat_id only) returns a "
                "confirmation: ask the user whether to delete that chat, and only if they say yes call again "
                "with the confirmation. The chat you are in cannot be deleted: offer to move out first.",
                DeleteChatArgs,
                self.delete_chat,
            ),
            Tool(
                "forget",
                "Forget a pinned or remembered fact of this chat, or something you know about the user, when the "
                "user asks to. On 'ambiguous', ask which candidate and call forget again with its exact text.",
                ForgetArgs,
                self.forget,
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
        return {**await self._switch_chat(args), **await self._from_copy()}

    async def _from_copy(self) -> dict[str, Any]:
        """The note for an answer read from this device's copy while the store is away."""
        return _FROM_COPY if (await self.store.pending_writes()).offline else {}

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
        _, queued = await _kept(self.store.create_chat(chat_id=chat_id, title=title), None)
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
            **await self._from_copy(),
        }

    async def rename_chat(self, args: RenameArgs) -> dict[str, Any]:
        title = args.title.strip()
        renamed, queued = await _kept(rename_chat(self.store, self.embedder, self.session.chat_id, title), None)
        shown = renamed.title if renamed else storable_title(title, self.session.chat_id)
        return {"result": "renamed", "title": shown, **queued}

    async def remember(self, args: RememberArgs) -> dict[str, Any]:
        # "next Tuesday" is kept with its date, computed now; a thread, as dateparser's first call
        # loads its language data (about 0.1 s) and the audio path shares this loop.
        fact = await asyncio.to_thread(with_absolute_dates, args.fact.strip(), self.clock.now().at, self.date_languages)
        if args.about_user:
            asked_entry = ProfileEntry(
                content=fact,
                importance=args.importance,
                subject=args.about or subject_of(fact),
                origin="remember",
                chat_id=self.session.chat_id,
            )
            # while the store is away the entry is on this device and waits in the outbox
            (entry,), queued = await _kept(self.store.save_profile([asked_entry]), [asked_entry])
            return {
                "result": "remembered",
                "profile_id": entry.id,
                "fact": entry.content,
                "known_in": "every chat",
                **queued,
            }
        asked = Pin(chat_id=self.session.chat_id, content=fact, importance=args.importance)
        pin, queued = await _kept(self.store.add_pin(asked), asked)
        return {"result": "remembered", "pin_id": pin.id, "fact": pin.content, **queued}

    async def recall(self, args: RecallArgs) -> dict[str, Any]:
        # "last Tuesday" is the user's Tuesday
        scope = None if args.all_chats else self.session.chat_id
        found = await self.recaller.recall(args.query, scope, self.clock.now().at)
        if not found:
            return {"matches": [], "say": f"Nothing was said or kept about {args.query!r}.", **await self._from_copy()}
        matches = []
        for r in found:
            match: dict[str, Any] = {"chat_id": r.chat_id, "kind": r.kind, "text": r.text}
            if r.range is not None:
                match["turns"] = str(r.range) if r.range.start != r.range.end else str(r.range.start)
            if args.all_chats or r.chat_id != self.session.chat_id:
                match["title"] = r.title or "(untitled)"
                if r.last_activity_at is not None:
                    match["last_talked"] = spoken_when(r.last_activity_at)
            if r.said_at is not None:
                # the day as a date too, so "when did I..." has an answer that does not move
                match["said"] = f"{spoken_when(r.said_at)} ({r.said_at.astimezone():%Y-%m-%d})"
            matches.append(match)
        return {"matches": matches, **await self._from_copy()}

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
        if not self._confirmations.take(args.confirmation, chat.id):
            return {
                "result": "confirm",
                **card,
                "confirmation": self._confirmations.issue(chat.id),
                "say": f"Ask the user whether to delete {card['title']} (last talked {card['last_talked']}) for good. "
                "Only if they say yes, call delete_chat again with this chat_id and confirmation.",
            }
        queued: dict[str, Any] = {}
        try:
            _, queued = await _kept(self.store.delete_chat(chat.id), None)
        except ChatNotFound:
            pass  # deleted meanwhile (from the CLI): what the user asked for is done
        return {"result": "deleted", "title": card["title"], "say": f"{card['title']} is deleted.", **queued}

    async def forget(self, args: ForgetArgs) -> dict[str, Any]:
        return {**await self._forget_item(args), **await self._from_copy()}

    async def _forget_item(self, args: ForgetArgs) -> dict[str, Any]:
        wanted = args.item.strip()
        items = await memory_items(self.store, self.session.chat_id) + await profile_items(self.store)
        if not items:
            return {"result": "none", "say": "Nothing is pinned or recorded as a fact in this chat."}
        exact = [i for i in items if i.content.casefold() == wanted.casefold()]
        if exact:
            return await self._forget(exact[0])
        scores = await similarities(self.embedder, wanted, [i.content for i in items])
        order = scores.argsort()[::-1]
        limits = self.search.thresholds
        # Forgetting the wrong thing is worse than asking, so the lead needed is the larger forget_margin.
        close = [
            items[i]
            for i in order
            if scores[i] >= limits.min_similarity and scores[order[0]] - scores[i] < self.forget_margin
        ]
        if len(close) == 1:
            return await self._forget(close[0])
        if close:
            return {
                "result": "ambiguous",
                "candidates": [i.content for i in close[: limits.max_candidates]],
                "say": "Ask which one to forget, then call forget with its exact text.",
            }
        return {"result": "none", "say": f"Nothing in this chat's memory matches {wanted!r}."}

    async def _forget(self, item: MemoryItem) -> dict[str, Any]:
        _, queued = await _kept(set_forgotten(self.store, self.embedder, item, forgotten=True), None)
        return {"result": "forgotten", "kind": item.kind, "text": item.content, **queued}
