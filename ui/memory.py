"""What the inspector needs of Parla's memory, and what it reads of one chat for its page."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Protocol

from parla.memory.chat import ChatHistory
from parla.memory.compaction import Compactor
from parla.memory.config import MemoryConfig
from parla.memory.context import MemoryContext, load_context
from parla.memory.embedding import Embedder
from parla.memory.facts import FactBlock
from parla.memory.pins import Pin
from parla.memory.search import ChatSearch
from parla.memory.store import ChatStore
from parla.memory.summary import Summary
from parla.memory.tokens import estimate_tokens
from parla.memory.turn import Turn


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


@dataclass(frozen=True)
class ChatPage:
    history: ChatHistory
    summaries: list[Summary]
    facts: list[FactBlock]
    pins: list[Pin]
    forgotten_pins: list[Pin]
    context: MemoryContext

    @property
    def assistant_history(self) -> list[Turn]:
        return self.history.assistant_history

    @property
    def full_tokens(self) -> int:
        return sum(estimate_tokens(t.transcript_line()) for t in self.history.full_history)

    @property
    def assistant_tokens(self) -> int:
        return sum(estimate_tokens(t.transcript_line()) for t in self.assistant_history)


async def load_chat_page(mem: InspectorMemory, chat_id: str) -> ChatPage:
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
    return ChatPage(history, summaries, facts, pins, forgotten, context)
