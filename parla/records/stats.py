"""MemoryStats: an overview of what the store (or one chat) holds."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel


class MemoryStats(BaseModel):
    total_chats: int
    total_messages: int
    total_summaries: int
    total_facts: int
    total_pins: int
    oldest_message: datetime | None
    newest_message: datetime | None
    average_importance: float | None  # of the pins not forgotten
    embedder: str | None
    embedding_dim: int | None
    embedded_texts: int
    # pins the detector made (not forgotten); the turns' importance on average, and how many reach
    # the importance that earns an old turn a place in the context (memory.language.importance.IMPORTANT)
    auto_pins: int = 0
    average_turn_importance: float | None = None
    important_turns: int = 0
    # turns waiting in a remote store's local outbox, and writes it refused for good (kept)
    outbox_depth: int = 0
    outbox_failed: int = 0
    # damaged outbox files moved aside (kept for recovery), and what last happened to the file
    outbox_set_aside: int = 0
    outbox_problem: str | None = None
