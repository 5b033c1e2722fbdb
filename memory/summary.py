"""Chunk summaries (level 0, a fixed range of messages) and meta summaries (level 1, consecutive
chunk summaries): the semantic half of seed 000's dual memory."""

from __future__ import annotations

from datetime import datetime
from enum import IntEnum

from pydantic import BaseModel, ConfigDict


class SummaryLevel(IntEnum):
    CHUNK = 0
    META = 1


class MessageRange(BaseModel):
    """Inclusive range of turn sequence numbers."""

    model_config = ConfigDict(frozen=True)

    start: int
    end: int

    def __str__(self) -> str:
        return f"{self.start}-{self.end}"

    def contains(self, other: MessageRange) -> bool:
        return self.start <= other.start and other.end <= self.end


class Summary(BaseModel):
    model_config = ConfigDict(frozen=True)

    chat_id: str
    level: SummaryLevel
    range: MessageRange
    text: str
    updated_at: datetime
