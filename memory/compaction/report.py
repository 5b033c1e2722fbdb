"""What one compaction run did (`CompactionReport`): what it folded, wrote and indexed, how long
each step took, and whether a summary of it was made offline."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass

from ..summarizers import offline_fallbacks

log = logging.getLogger("parla.compaction")


@dataclass
class CompactionReport:
    chat_id: str
    turns_folded: int = 0
    tokens_before: int = 0
    tokens_after: int = 0
    chunk_summaries: int = 0
    fact_blocks: int = 0
    auto_pins: int = 0
    profile_entries: int = 0
    meta_summaries: int = 0
    windows_indexed: int = 0
    described: bool = False
    titled: str | None = None
    # Why some of this run's summaries were made by the offline summarizer (Gemini could not be used).
    offline: str | None = None
    # each step's time: folding into the rolling summary (and describing, titling), chunk
    # summaries with facts, meta summaries; and the whole run
    fold_ms: float = 0.0
    chunks_ms: float = 0.0
    metas_ms: float = 0.0
    duration_ms: float = 0.0

    @contextmanager
    def timed(self, step: str) -> Iterator[None]:
        """Add the time spent in the block to `<step>_ms`."""
        started = time.perf_counter()
        try:
            yield
        finally:
            name = f"{step}_ms"
            setattr(self, name, round(getattr(self, name) + (time.perf_counter() - started) * 1000, 1))

    def log_line(self) -> str:
        fields = (
            f"{k}={json.dumps(v) if isinstance(v, str) and ' ' in v else v}"
            for k, v in asdict(self).items()
            if v not in (None, False)
        )
        return " ".join(fields)


@contextmanager
def offline_noted(report: CompactionReport) -> Iterator[None]:
    """Notes in `report` whether any summary of the run was made offline (FallbackSummarizer)."""
    reasons: list[str] = []
    token = offline_fallbacks.set(reasons)
    try:
        yield
    finally:
        offline_fallbacks.reset(token)
        if reasons:
            report.offline = reasons[0]
            log.info(
                "chat %s summarised offline (%s); its next fold is summarised by Gemini again",
                report.chat_id,
                reasons[0],
                extra={"event": "compaction_offline", "chat_id": report.chat_id},
            )
