"""Chunk summaries (level 0, a fixed range of messages) and meta summaries (level 1, consecutive
chunk summaries): the semantic half of the dual memory (facts are the episodic half)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import IntEnum

from pydantic import BaseModel, ConfigDict

from .turn import MessageRange


class SummaryLevel(IntEnum):
    CHUNK = 0
    META = 1


@dataclass(frozen=True)
class ChunkSummary:
    """A summarizer's chunk summary and how much the range matters later (0-10), from one call."""

    text: str
    importance: float


class Summary(BaseModel):
    model_config = ConfigDict(frozen=True)

    chat_id: str
    level: SummaryLevel
    range: MessageRange
    text: str
    updated_at: datetime
    # 0-10, how much the range matters later (chunk summaries; None for meta summaries and older rows)
    importance: float | None = None
