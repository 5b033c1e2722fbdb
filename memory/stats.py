"""MemoryStats: an overview of what the store holds."""

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
    average_importance: float | None
    embedder: str | None
    embedding_dim: int | None
    embedded_texts: int
    # turns waiting in a remote store's local outbox, and writes it refused for good (kept)
    outbox_depth: int = 0
    outbox_failed: int = 0
    # damaged outbox files moved aside (kept for recovery), and what last happened to the file
    outbox_set_aside: int = 0
    outbox_problem: str | None = None
