"""Summarizers write the rolling summary, chunk summaries, facts, meta summaries and titles:
Gemini (a cheap flash model) or an offline extractive one, so the default works with no key."""

from __future__ import annotations

from contextvars import ContextVar
from typing import Protocol

from parla.records.summary import ChunkSummary
from parla.records.turn import Turn

from ..language.auto_pins import PinCandidate

# Set by a compaction run to a list that collects why a summarizer fell back to the offline one
# (one entry per call); the run's report says the chat was summarised offline.
offline_fallbacks: ContextVar[list[str] | None] = ContextVar("offline_fallbacks", default=None)


class Summarizer(Protocol):
    name: str

    async def rolling_summary(self, existing: str, turns: list[Turn], cap_tokens: int) -> str:
        """`existing` (may be empty) updated with `turns`, within `cap_tokens`."""
        ...

    async def chunk_summary(self, turns: list[Turn], cap_tokens: int) -> ChunkSummary:
        """The summary of a chunk and its importance (0-10), judged in the same call."""
        ...

    async def facts(self, turns: list[Turn]) -> list[str]:
        """Specific facts worth keeping, one per line; [] when there are none."""
        ...

    async def pins(self, turns: list[Turn]) -> list[PinCandidate]:
        """The user's durable statements among `turns` that deserve a pin, each with its source turn."""
        ...

    async def about_user(self, candidates: list[PinCandidate]) -> list[PinCandidate]:
        """Of the candidates `pins` said are about the user, those that are a lasting fact the user
        stated about themselves: what may enter the profile."""
        ...

    async def meta_summary(self, summaries: list[str], cap_tokens: int) -> str: ...

    async def title(self, description: str) -> str: ...


def transcript(turns: list[Turn], max_chars: int | None = None) -> str:
    """The turns as "User: ..." / "Assistant: ..." lines; with `max_chars`, a longer line keeps
    its start and its end around a marked cut (a pasted document must not swamp the prompt, and
    what a message concludes is often at its end)."""
    return "\n".join(shortened(t.transcript_line(), max_chars) for t in turns)


def shortened(text: str, max_chars: int | None) -> str:
    if max_chars is None or len(text) <= max_chars:
        return text
    head = max_chars * 2 // 3
    return f"{text[:head].rstrip()} […] {text[len(text) - (max_chars - head) :].lstrip()}"
