"""What the inspector needs of Parla's memory, and what it reads of one chat for its page."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Protocol

from parla.kernel.tokens import estimate_tokens
from parla.memory.compaction.compactor import Compactor
from parla.memory.compaction.summary_queue import QueueProgress
from parla.memory.config import MemoryConfig
from parla.memory.context import Dropped, MemoryContext, load_context
from parla.memory.language.absolute_dates import DateReading
from parla.memory.retrieval.search import ChatSearch
from parla.memory.store.protocol import ChatStore
from parla.records.chat import ChatHistory
from parla.records.embedding import Embedder
from parla.records.facts import FactBlock
from parla.records.pins import Pin
from parla.records.summary import Summary
from parla.records.turn import Turn


class InspectorMemory(Protocol):
    """The memory services the CLI and the tools use (the daemon's `MemoryServices`)."""

    @property
    def store(self) -> ChatStore: ...
    @property
    def embedder(self) -> Embedder: ...
    @property
    def search(self) -> ChatSearch: ...
    @property
    def compactor(self) -> Compactor: ...
    @property
    def settings(self) -> MemoryConfig: ...
    @property
    def dates(self) -> DateReading: ...
    @property
    def reminder_wake(self) -> asyncio.Event:
        """Set after a reminder is set or cancelled: the daemon's scheduler, when it runs in this
        process, reads the reminders again."""
        ...

    @property
    def summary_progress(self) -> QueueProgress: ...


@dataclass(frozen=True)
class DroppedGroup:
    """What the budget dropped for one reason in one section (a long chat drops thousands of facts)."""

    section: str
    reason: str
    count: int
    tokens: int
    labels: str  # the first and the last label


# Turns of the full history shown at first, the newest; earlier ones come a page at a time (a
# 5,000-turn history is most of a long chat's page and of the time it takes to show).
HISTORY_PAGE = 500
# Chunk summaries and fact blocks shown at first: the newest ranges (a 5,000-turn chat has 500 of
# each, and their markup would make the page slow); the page links to all of them.
NEWEST_RANGES = 20


@dataclass(frozen=True)
class ChatPage:
    history: ChatHistory
    summaries: list[Summary]
    facts: list[FactBlock]
    pins: list[Pin]
    forgotten_pins: list[Pin]
    context: MemoryContext
    all_ranges: bool = False
    all_turns: bool = False

    @property
    def shown_turns(self) -> list[Turn]:
        turns = self.history.full_history
        return turns if self.all_turns else turns[-HISTORY_PAGE:]

    @property
    def earlier_turns(self) -> int:
        return len(self.history.full_history) - len(self.shown_turns)

    @property
    def shown_model_turns(self) -> list[Turn]:
        """The model's history under the same cap: its summary turn and its newest turns."""
        turns = self.assistant_history
        if self.all_turns or len(turns) <= HISTORY_PAGE:
            return turns
        summary = turns[:1] if self.history.chat.rolling_summary else []
        return [*summary, *turns[-HISTORY_PAGE:]]

    @property
    def earlier_model_turns(self) -> int:
        return len(self.assistant_history) - len(self.shown_model_turns)

    @property
    def shown_summaries(self) -> list[Summary]:
        """Meta summaries, then the chunk summaries (the newest unless all are asked for), in order."""
        metas = sorted((s for s in self.summaries if s.level == 1), key=lambda s: s.range.start)
        chunks = sorted((s for s in self.summaries if s.level == 0), key=lambda s: s.range.start)
        return metas + (chunks if self.all_ranges else chunks[-NEWEST_RANGES:])

    @property
    def shown_facts(self) -> list[FactBlock]:
        """The fact blocks (the newest, and any holding a forgotten line, unless all are asked for)."""
        blocks = sorted(self.facts, key=lambda b: b.range.start)
        if self.all_ranges:
            return blocks
        newest = blocks[-NEWEST_RANGES:]
        return [b for b in blocks[:-NEWEST_RANGES] if b.forgotten] + newest

    @property
    def hidden(self) -> int:
        """Chunk summaries and fact blocks not shown."""
        return len(self.summaries) - len(self.shown_summaries) + len(self.facts) - len(self.shown_facts)

    @property
    def assistant_history(self) -> list[Turn]:
        return self.history.assistant_history

    @property
    def dropped(self) -> list[DroppedGroup]:
        groups: dict[tuple[str, str], list[Dropped]] = {}
        for d in self.context.dropped:
            groups.setdefault((d.section, d.reason), []).append(d)
        return [
            DroppedGroup(
                section,
                reason,
                len(items),
                sum(d.tokens for d in items),
                items[0].label if len(items) == 1 else f"{items[0].label} … {items[-1].label}",
            )
            for (section, reason), items in groups.items()
        ]

    @property
    def full_tokens(self) -> int:
        return sum(estimate_tokens(t.transcript_line()) for t in self.history.full_history)

    @property
    def assistant_tokens(self) -> int:
        return sum(estimate_tokens(t.transcript_line()) for t in self.assistant_history)


async def load_chat_page(
    mem: InspectorMemory, chat_id: str, *, all_ranges: bool = False, all_turns: bool = False
) -> ChatPage:
    """Everything the chat page shows; the context is read and built by the same function that
    seeds a live session."""
    store = mem.store
    history, summaries, facts, pins, forgotten, context = await asyncio.gather(
        store.load_history(chat_id),
        store.list_summaries(chat_id),
        store.list_facts(chat_id),
        store.list_pins(chat_id),
        store.list_pins(chat_id, forgotten=True),
        load_context(store, chat_id, mem.settings),
    )
    return ChatPage(history, summaries, facts, pins, forgotten, context, all_ranges, all_turns)
