"""Compaction: the rolling summary + verbatim tail, and the dual memory of chunk summaries and facts;
`Compactor` runs its steps on one chat, `CompactionWorker` runs it in the background.

One run of `Compactor.compact(chat_id)`:
0. Windows of what was said are indexed for search (`turn_windows`), new ones only.
1. Rolling summary (`rolling_summary`). When the unsummarised turns pass `summary_window_size`
   or the summary plus those turns pass `chunk_summarize_threshold` tokens, everything but the
   last `tail` turns is folded into the summary by one model call and committed only if no other
   compaction committed meanwhile (turns appended meanwhile keep their place in the tail). A
   young chat that has never been compacted is described by its opening turns instead, so
   search finds it early.
2. Dual memory (`dual_memory`). Every complete chunk of `chunk_size` messages gets a chunk
   summary (with its importance) and, in parallel, a fact extraction and the auto-pin detection,
   all from the raw messages; every `meta_every` chunk summaries get a meta summary. All are
   upserted per range (auto pins by an id derived from the fact), so repeating a run changes
   nothing. A `remember` pin whose asking turn was not stored yet when it was pinned gets its
   source turn here (`pins_and_profile`).
3. Profile (`pins_and_profile`). The user's durable statements join the user's profile across
   chats (`parla.records.profile`), each once (its id derives from its turn and fact): those the
   rules read in every user turn not yet summarised (so each turn is read soon after it is
   stored, in a chat of any length: this run follows each stored turn), and those the chunks'
   detection found. The summary model says of each of its statements whether it is about the user
   or about this chat only (that one stays a pin) and what it is about (its subject), and is then
   asked once more whether each it put about the user is a lasting fact the user stated about
   themselves: only those enter the profile.

`Compactor.learn(chat_id)` reads every user turn of a chat for the profile alone, whatever was
summarised before: an import does it as it stores a chat (the summaries may wait for the queue),
and `parla memory backfill` for every stored chat.

Each write is atomic on its own, so a failure part-way (a model error, a crash) leaves every
stored item either as it was or complete; the next run picks up what is missing.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Protocol, Self

from parla.kernel.tasks import cancel_and_wait
from parla.records.embedding import Embedder
from parla.records.errors import RangeError
from parla.records.turn import MessageRange

from ..config import MemoryConfig
from ..errors import ModelUnavailable
from ..language.absolute_dates import DateReading
from ..language.auto_pins import offline_candidates
from ..retrieval.turn_windows import WindowIndexer, index_title
from ..store.protocol import ChatRecords, MemoryRecords, SearchIndex
from ..summarizers import Summarizer
from .dual_memory import DualMemory, chunk_ranges
from .pins_and_profile import learn_from_chat
from .report import CompactionReport, offline_noted
from .rolling_summary import RollingSummary

log = logging.getLogger("parla.compaction")


class CompactionStore(ChatRecords, MemoryRecords, SearchIndex, Protocol):
    """The store roles a compaction uses: the chat and its turns, what is kept of them, and the
    windows of what was said that search reads."""


class Compactor:
    def __init__(
        self,
        store: CompactionStore,
        summarizer: Summarizer,
        embedder: Embedder,
        config: MemoryConfig,
        dates: DateReading | None = None,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.config = config
        self.windows = WindowIndexer(store, embedder, config.search_window_turns)
        self.rolling_summary = RollingSummary(store, summarizer, embedder, config)
        self.dual_memory = DualMemory(store, summarizer, embedder, config, dates)

    async def compact(self, chat_id: str) -> CompactionReport:
        started = time.perf_counter()
        report = CompactionReport(chat_id)
        # what was said is searchable first, even when a summary call fails below; the chat read
        # once for both steps (on Supabase each read is a request)
        chat = await self.store.get_chat(chat_id)
        report.windows_indexed = await self.windows.index(chat_id, chat)
        with offline_noted(report):
            with report.timed("fold"):
                chat, unsummarised = await self.rolling_summary.fold(chat_id, report, chat)
            if report.titled:  # a generated title is searchable as soon as it is given
                report.windows_indexed += await index_title(self.store, self.embedder, chat)
            await self.dual_memory.update(
                chat, report, only=None, said=offline_candidates(unsummarised), read_before=unsummarised
            )
        report.duration_ms = round((time.perf_counter() - started) * 1000, 1)
        log.info("compaction %s", report.log_line(), extra={"event": "compaction", **asdict(report)})
        return report

    async def learn(self, chat_id: str) -> CompactionReport:
        """Read every user turn of the chat, a page at a time, for what it says about the user
        (the rules alone: no model call), and add it to the profile."""
        started = time.perf_counter()
        report = CompactionReport(chat_id)
        await learn_from_chat(self.store, self.config, self.dual_memory.dates, chat_id, report)
        report.duration_ms = round((time.perf_counter() - started) * 1000, 1)
        return report

    async def regenerate(self, chat_id: str, rng: MessageRange | None, *, facts_only: bool = False) -> CompactionReport:
        """A manual regeneration: redo the chunk summaries and facts of `rng` (whole
        chunks; every chunk when None) and the meta summaries that cover them; with
        `facts_only`, the facts alone (after a change of the fact prompt or model)."""
        started = time.perf_counter()
        chat = await self.store.get_chat(chat_id)
        chunks = chunk_ranges(chat.turn_count, self.config.chunk_size)
        if rng is not None:
            self._check_range(rng, chunks)
        report = CompactionReport(chat_id)
        with offline_noted(report):
            only = rng or MessageRange(start=1, end=max(chat.turn_count, 1))
            await self.dual_memory.update(chat, report, only=only, facts_only=facts_only)
        report.duration_ms = round((time.perf_counter() - started) * 1000, 1)
        log.info("regeneration %s", report.log_line(), extra={"event": "regeneration", **asdict(report)})
        return report

    def _check_range(self, rng: MessageRange, chunks: list[MessageRange]) -> None:
        size = self.config.chunk_size
        if not chunks:
            raise RangeError(f"this chat has no complete chunk of {size} messages yet: nothing to regenerate")
        aligned = (rng.start - 1) % size == 0 and rng.end % size == 0 and rng.start <= rng.end
        if not aligned or rng.end > chunks[-1].end:
            raise RangeError(
                f"range {rng} is not a run of whole chunks: chunks are {size} messages "
                f"(1-{size}, {size + 1}-{2 * size}, ...) and this chat has {chunks[0]} to {chunks[-1]}"
            )


@dataclass
class CompactionWorker:
    """Runs compactions in the background: at most one at a time per chat (a request that arrives
    while its chat is being compacted makes the run go once more afterwards), at most
    `concurrency` chats at once, each run retried with exponential backoff when it fails, except
    when a model cannot be used (its client already retried; the run says so at once). The
    worker owns its tasks: leaving the `async with` cancels what is still running, which is safe
    because every write of a run is atomic on its own."""

    compactor: Compactor
    concurrency: int = 2
    retries: int = 3
    retry_delay: float = 1.0
    # Called after each run with the chat id and whether it succeeded (progress, metrics).
    on_done: Callable[[str, bool], None] | None = None
    last_errors: dict[str, str] = field(default_factory=dict)
    # Chats whose last run was summarised (partly) offline, and why Gemini could not be used.
    offline: dict[str, str] = field(default_factory=dict)
    _running: dict[str, asyncio.Task[None]] = field(default_factory=dict, init=False)
    _again: set[str] = field(default_factory=set, init=False)
    _slots: asyncio.Semaphore | None = field(default=None, init=False)

    async def __aenter__(self) -> Self:
        self._slots = asyncio.Semaphore(self.concurrency)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await cancel_and_wait(*self._running.values())

    def schedule(self, chat_id: str) -> None:
        if self._slots is None:
            raise RuntimeError("use the CompactionWorker inside `async with`")
        if chat_id in self._running:
            self._again.add(chat_id)
            return
        self._running[chat_id] = asyncio.create_task(self._run(chat_id), name=f"compaction:{chat_id}")

    @property
    def pending(self) -> int:
        return len(self._running)

    async def drain(self) -> None:
        """Wait until every scheduled compaction (and its reruns) has finished."""
        while self._running:
            await asyncio.gather(*list(self._running.values()), return_exceptions=True)

    async def _run(self, chat_id: str) -> None:
        assert self._slots is not None
        try:
            while True:
                self._again.discard(chat_id)
                async with self._slots:
                    await self._with_retries(chat_id)
                if chat_id not in self._again:
                    return
        finally:
            self._running.pop(chat_id, None)

    async def _with_retries(self, chat_id: str) -> None:
        for attempt in range(self.retries + 1):
            try:
                report = await self.compactor.compact(chat_id)
                self.last_errors.pop(chat_id, None)
                if report.offline:
                    self.offline[chat_id] = report.offline
                else:
                    self.offline.pop(chat_id, None)
                if self.on_done:
                    self.on_done(chat_id, True)
                return
            except asyncio.CancelledError:
                raise
            except Exception as e:  # noqa: BLE001 - any failure leaves the data intact; report and retry
                self.last_errors[chat_id] = f"{type(e).__name__}: {e}"
                if attempt == self.retries or isinstance(e, ModelUnavailable):
                    log.error(
                        "compaction failed chat=%s attempts=%d error=%s; data left as it was, next turn retries",
                        chat_id,
                        attempt + 1,
                        e,
                        extra={"event": "compaction_failed", "chat_id": chat_id},
                    )
                    if self.on_done:
                        self.on_done(chat_id, False)
                    return
                delay = self.retry_delay * 2**attempt
                log.warning("compaction retry chat=%s attempt=%d in=%.1fs error=%s", chat_id, attempt + 1, delay, e)
                await asyncio.sleep(delay)
