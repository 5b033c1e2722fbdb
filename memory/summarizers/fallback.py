"""Gemini, or the offline summarizer while Gemini cannot be used.

When a call raises ModelUnavailable (Gemini unreachable, or the key refused), the same work is done
by the offline extractive summarizer instead of leaving the chat undescribed, and the fallback is
recorded in `offline_fallbacks` so the compaction that asked can say so. Its rolling summary is
rewritten by Gemini at the chat's next fold, since each fold rewrites the summary it is given."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

from parla.records.summary import ChunkSummary
from parla.records.turn import Turn

from ..errors import ModelUnavailable
from ..language.auto_pins import PinCandidate
from . import Summarizer, offline_fallbacks

log = logging.getLogger(__name__)
T = TypeVar("T")


class FallbackSummarizer:
    def __init__(self, primary: Summarizer, offline: Summarizer) -> None:
        self.primary = primary
        self.offline = offline
        self.name = primary.name

    async def _either(self, ask: Callable[[Summarizer], Awaitable[T]]) -> T:
        try:
            return await ask(self.primary)
        except ModelUnavailable as e:
            log.info("summarising offline: %s", e)
            reasons = offline_fallbacks.get()
            if reasons is not None:
                reasons.append(str(e))
            return await ask(self.offline)

    async def rolling_summary(self, existing: str, turns: list[Turn], cap_tokens: int) -> str:
        return await self._either(lambda s: s.rolling_summary(existing, turns, cap_tokens))

    async def chunk_summary(self, turns: list[Turn], cap_tokens: int) -> ChunkSummary:
        return await self._either(lambda s: s.chunk_summary(turns, cap_tokens))

    async def pins(self, turns: list[Turn]) -> list[PinCandidate]:
        return await self._either(lambda s: s.pins(turns))

    async def about_user(self, candidates: list[PinCandidate]) -> list[PinCandidate]:
        async def unchecked(summarizer: Summarizer) -> list[PinCandidate]:
            # the offline summarizer keeps what it is given: statements Gemini found and cannot
            # check now stay pins of their chat rather than enter the profile unchecked
            return await summarizer.about_user(candidates) if summarizer is self.primary else []

        return await self._either(unchecked)

    async def facts(self, turns: list[Turn]) -> list[str]:
        return await self._either(lambda s: s.facts(turns))

    async def meta_summary(self, summaries: list[str], cap_tokens: int) -> str:
        return await self._either(lambda s: s.meta_summary(summaries, cap_tokens))

    async def title(self, description: str) -> str:
        return await self._either(lambda s: s.title(description))
