"""The memory tools: remember (a fact pinned in this chat, or about the user and known in every
chat), recall (what was said or kept about something, here or in every chat) and forget (a pinned
or remembered fact, or something known about the user). Each answers the model with what happened
and, where the model has to say something, what to say.

When the store's server is away, remember and forget are kept in the outbox and answered at once,
marked `queued`, and recall and forget read this device's copy (tools.answers)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Protocol

from pydantic import BaseModel, Field

from parla.kernel.local_time import LocalClock
from parla.memory.config import MemoryConfig
from parla.memory.forgetting import MemoryItem, memory_items, profile_items, set_forgotten
from parla.memory.language.absolute_dates import with_absolute_dates
from parla.memory.language.profile_rules import subject_of
from parla.memory.retrieval.recall import Recall
from parla.memory.retrieval.search import Thresholds
from parla.memory.store.protocol import MemoryRecords, StoreState
from parla.records.embedding import Embedder, similarities
from parla.records.pins import Pin
from parla.records.profile import ProfileEntry

from .answers import from_copy, kept, spoken_when
from .chats import ChatSession
from .registry import Tool


class MemoryToolStore(MemoryRecords, StoreState, Protocol):
    """What the memory tools use of the store: pins, facts and the profile, and whether the
    server answers (recall goes through `Recall`)."""


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


class ForgetArgs(BaseModel):
    item: str = Field(
        min_length=1, description="The pinned or remembered fact to forget, in the user's words or exactly as recalled."
    )


class MemoryTools:
    def __init__(
        self,
        store: MemoryToolStore,
        recaller: Recall,
        embedder: Embedder,
        session: ChatSession,
        config: MemoryConfig,
        clock: LocalClock | None = None,
        date_languages: Sequence[str] = ("en",),
    ) -> None:
        """`clock` and `date_languages`: how relative dates in a fact to remember are read (the
        system's zone and English by default)."""
        self.store = store
        self.recaller = recaller
        self.embedder = embedder
        self.session = session
        self.clock = clock or LocalClock()
        self.date_languages = tuple(date_languages)
        self.forget_margin = config.forget_margin
        # what is close enough to forget, and how many to ask about, as a search by meaning has it
        self.thresholds = Thresholds.of(config, embedder)

    def tools(self) -> list[Tool]:
        return [
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
                "forget",
                "Forget a pinned or remembered fact of this chat, or something you know about the user, when the "
                "user asks to. On 'ambiguous', ask which candidate and call forget again with its exact text.",
                ForgetArgs,
                self.forget,
            ),
        ]

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
            (entry,), queued = await kept(self.store.save_profile([asked_entry]), [asked_entry])
            return {
                "result": "remembered",
                "profile_id": entry.id,
                "fact": entry.content,
                "known_in": "every chat",
                **queued,
            }
        asked = Pin(chat_id=self.session.chat_id, content=fact, importance=args.importance)
        pin, queued = await kept(self.store.add_pin(asked), asked)
        return {"result": "remembered", "pin_id": pin.id, "fact": pin.content, **queued}

    async def recall(self, args: RecallArgs) -> dict[str, Any]:
        # "last Tuesday" is the user's Tuesday
        scope = None if args.all_chats else self.session.chat_id
        found = await self.recaller.recall(args.query, scope, self.clock.now().at)
        if not found:
            return {
                "matches": [],
                "say": f"Nothing was said or kept about {args.query!r}.",
                **await from_copy(self.store),
            }
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
        return {"matches": matches, **await from_copy(self.store)}

    async def forget(self, args: ForgetArgs) -> dict[str, Any]:
        return {**await self._forget_item(args), **await from_copy(self.store)}

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
        limits = self.thresholds
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
        _, queued = await kept(set_forgotten(self.store, self.embedder, item, forgotten=True), None)
        return {"result": "forgotten", "kind": item.kind, "text": item.content, **queued}
