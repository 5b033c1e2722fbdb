"""Compaction: the rolling summary + verbatim tail, and the dual memory of chunk summaries and facts.

One run of `Compactor.compact(chat_id)`:
0. Windows of what was said are indexed for search (`turn_windows`), new ones only.
1. Rolling summary. When the unsummarised turns pass `summary_window_size` or the summary plus
   those turns pass `chunk_summarize_threshold` tokens, everything but the last `tail` turns is
   folded into the summary by one model call and committed only if no other compaction committed
   meanwhile (turns appended meanwhile keep their place in the tail). A young chat that has
   never been compacted is described by its opening turns instead, so search finds it early.
2. Dual memory. Every complete chunk of `chunk_size` messages gets a chunk summary (with its
   importance) and, in parallel, a fact extraction and the auto-pin detection, all from the raw
   messages; every `meta_every` chunk summaries get a meta summary. All are upserted per range
   (auto pins by an id derived from the fact), so repeating a run changes nothing. A `remember`
   pin whose asking turn was not stored yet when it was pinned gets its source turn here.
3. Profile. The user's durable statements found by the chunks' detection, and by the rules in the
   unsummarised turns (so a short chat counts too), join the user's profile across chats
   (`parla.records.profile`), each once (its id derives from its turn and fact). The summary model says
   of each whether it is about the user or about this chat only (that one stays a pin), and what
   it is about (its subject).

Each write is atomic on its own, so a failure part-way (a model error, a crash) leaves every
stored item either as it was or complete; the next run picks up what is missing.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from typing import Self

import numpy as np

from parla.kernel.tasks import cancel_and_wait
from parla.kernel.tokens import estimate_tokens, truncate_to_tokens
from parla.records.chat import Chat
from parla.records.embedding import EmbeddedText, Embedder, embed_texts, normalize_rows
from parla.records.errors import RangeError
from parla.records.facts import format_fact_lines
from parla.records.summary import SummaryLevel
from parla.records.turn import MessageRange, Turn

from ..config import MemoryConfig
from ..errors import ModelUnavailable, StoreError
from ..language.absolute_dates import DateReading
from ..language.auto_pins import PinCandidate, find_sources, new_auto_pins, offline_candidates, said_in
from ..language.profile_rules import new_profile_entries
from ..retrieval.turn_windows import WindowIndexer, index_title
from ..store.protocol import ChatStore, CompactionCommit
from ..summarizers import Summarizer, offline_fallbacks, transcript

log = logging.getLogger("parla.compaction")

# Commits refused because another process compacted the same chat first are retried this often.
_MAX_RACES = 3


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


def title_drift(title_vector: np.ndarray, summary_text: EmbeddedText) -> float:
    """Cosine distance between a title's embedding and the chat's summary text."""
    return 1.0 - float(title_vector @ summary_text.vector)


def chunk_ranges(turn_count: int, chunk_size: int) -> list[MessageRange]:
    """The complete chunks of a chat with `turn_count` turns."""
    return [MessageRange(start=s, end=s + chunk_size - 1) for s in range(1, turn_count - chunk_size + 2, chunk_size)]


def meta_ranges(chunks: list[MessageRange], meta_every: int) -> list[tuple[MessageRange, list[MessageRange]]]:
    """Each run of `meta_every` consecutive complete chunks and the range it spans."""
    out = []
    for i in range(0, len(chunks) - meta_every + 1, meta_every):
        group = chunks[i : i + meta_every]
        out.append((MessageRange(start=group[0].start, end=group[-1].end), group))
    return out


def history_tokens(rolling_summary: str, turns: list[Turn]) -> int:
    return estimate_tokens(rolling_summary) + sum(estimate_tokens(t.transcript_line()) for t in turns)


def needs_folding(chat: Chat, unsummarised: list[Turn], config: MemoryConfig) -> bool:
    if len(unsummarised) <= config.tail:
        return False
    return (
        len(unsummarised) > config.summary_window_size
        or history_tokens(chat.rolling_summary, unsummarised) > config.chunk_summarize_threshold
    )


class Compactor:
    def __init__(
        self,
        store: ChatStore,
        summarizer: Summarizer,
        embedder: Embedder,
        config: MemoryConfig,
        dates: DateReading | None = None,
    ) -> None:
        self.store = store
        self.summarizer = summarizer
        self.embedder = embedder
        self.config = config
        # relative dates in the facts and pins found, made absolute from when their turn was said
        self.dates = dates
        self.windows = WindowIndexer(store, embedder, config.search_window_turns)

    async def compact(self, chat_id: str) -> CompactionReport:
        started = time.perf_counter()
        report = CompactionReport(chat_id)
        # what was said is searchable first, even when a summary call fails below; the chat read
        # once for both steps (on Supabase each read is a request)
        chat = await self.store.get_chat(chat_id)
        report.windows_indexed = await self.windows.index(chat_id, chat)
        with _offline_noted(report):
            with report.timed("fold"):
                chat, unsummarised = await self._fold(chat_id, report, chat)
            if report.titled:  # a generated title is searchable as soon as it is given
                report.windows_indexed += await index_title(self.store, self.embedder, chat)
            await self._dual_memory(
                chat, report, only=None, said=offline_candidates(unsummarised), read_before=unsummarised
            )
        report.duration_ms = round((time.perf_counter() - started) * 1000, 1)
        log.info("compaction %s", report.log_line(), extra={"event": "compaction", **asdict(report)})
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
        with _offline_noted(report):
            only = rng or MessageRange(start=1, end=max(chat.turn_count, 1))
            await self._dual_memory(chat, report, only=only, facts_only=facts_only)
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

    # -- rolling summary -------------------------------------------------------------------

    async def _fold(self, chat_id: str, report: CompactionReport, read: Chat | None = None) -> tuple[Chat, list[Turn]]:
        """Fold until the unsummarised part is under the triggers again. One step folds at most
        `chunk_summarize_threshold` tokens of turns, so a long imported chat is summarised in
        several bounded calls rather than one huge one; each step commits on its own. Returns the
        chat and the turns that were unsummarised when the run began. `read`: the chat as the
        caller just read it."""
        races = 0
        began: list[Turn] | None = None
        known = read
        while True:
            # after a step, the chat its commit returned (on Supabase each read is a request)
            chat = known or await self.store.get_chat(chat_id)
            unsummarised = await self.store.load_turns(chat_id, chat.summarized_through + 1)
            report.tokens_after = history_tokens(chat.rolling_summary, unsummarised)
            if began is None:
                report.tokens_before, began = report.tokens_after, unsummarised
            if not needs_folding(chat, unsummarised, self.config):
                return await self._describe_young(chat, unsummarised, report), began
            folded = self._fold_step(unsummarised[: -self.config.tail])
            summary = truncate_to_tokens(
                await self.summarizer.rolling_summary(chat.rolling_summary, folded, self.config.summary_token_cap),
                self.config.summary_token_cap,
            )
            (summary_text,) = await embed_texts(self.embedder, [summary])
            title = await self._title(chat, summary, summary_text, chat.turn_count)
            known = committed = await self.store.commit_compaction(
                CompactionCommit(
                    chat_id=chat_id,
                    expected_version=chat.compaction_version,
                    summarized_through=folded[-1].seq,
                    rolling_summary=summary,
                    summary_text=summary_text,
                    title=title,
                )
            )
            if committed is None:
                races += 1
                if races >= _MAX_RACES:
                    raise StoreError(f"chat {chat_id} kept being compacted elsewhere; gave up after {races} tries")
                continue
            report.turns_folded += len(folded)
            report.described = True
            report.titled = title or report.titled

    def _fold_step(self, foldable: list[Turn]) -> list[Turn]:
        budget = self.config.chunk_summarize_threshold
        used = 0
        for i, turn in enumerate(foldable):
            used += estimate_tokens(turn.transcript_line())
            if used > budget and i > 0:
                return foldable[:i]
        return foldable

    async def _describe_young(self, chat: Chat, unsummarised: list[Turn], report: CompactionReport) -> Chat:
        """Before its first compaction a chat is described (and searchable) by its opening turns."""
        if chat.summarized_through > 0 or not unsummarised:
            return chat
        opening = truncate_to_tokens(
            transcript(unsummarised[: self.config.search_opening_turns]), self.config.summary_token_cap
        )
        if opening == chat.summary_text:
            return chat
        (summary_text,) = await embed_texts(self.embedder, [opening])
        title = await self._title(chat, opening, summary_text, len(unsummarised))
        if await self.store.set_summary_text(chat.id, summary_text, chat.compaction_version, title=title):
            report.described = True
            report.titled = title
        return await self.store.get_chat(chat.id)

    async def _title(self, chat: Chat, text: str, summary_text: EmbeddedText, turns: int) -> str | None:
        """A new generated title for the chat described by `text`, or None to keep its title.
        A user's title is kept. The first title waits for `title_min_turns` turns, so it names
        the topic rather than the greeting; a generated title is redone only when the
        summary text has drifted further than `title_drift_distance` from it."""
        if chat.title is not None and not chat.title_generated:
            return None
        if chat.title is None:
            return await self.summarizer.title(text) if turns >= self.config.title_min_turns else None
        limit = self.config.title_drift_distance
        if limit is None:
            limit = self.embedder.calibration.title_drift_distance
        if title_drift(normalize_rows(await self.embedder.embed([chat.title], "query"))[0], summary_text) <= limit:
            return None
        title = await self.summarizer.title(text)
        if title != chat.title:
            log.info("title refreshed for chat %s", chat.id, extra={"event": "title_refreshed", "chat_id": chat.id})
            return title
        return None

    # -- dual memory -----------------------------------------------------------------------

    async def _dual_memory(
        self,
        chat: Chat,
        report: CompactionReport,
        only: MessageRange | None,
        facts_only: bool = False,
        said: list[PinCandidate] | None = None,
        read_before: Sequence[Turn] = (),
    ) -> None:
        """Missing chunk summaries, facts and meta summaries; with `only`, redo those inside it
        (with `facts_only`, the facts alone). The profile gets what the chunks' detection found
        and the statements `said` outside them. A chunk whose turns are all in `read_before`
        (read by this run) is made from them: on Supabase each read is a request."""
        chunks = chunk_ranges(chat.turn_count, self.config.chunk_size)
        # Chunk texts by range; the jobs below add what they write, for the meta summaries.
        chunk_text = {s.range: s.text for s in await self.store.list_summaries(chat.id, SummaryLevel.CHUNK)}
        # ranges already extracted, with the lines the user asked to forget there
        extracted = {f.range: set(f.forgotten) for f in await self.store.list_facts(chat.id)}
        jobs: list[Callable[[], Awaitable[None]]] = []
        # what the chunks' detections found and the turns they read, pinned once every chunk is done
        found: list[PinCandidate] = []
        read: list[Turn] = []
        in_hand = {t.seq: t for t in read_before}
        for rng in chunks:
            forced = only is not None and only.contains(rng)
            need_summary = not facts_only and (forced or rng not in chunk_text)
            need_facts = forced or rng not in extracted
            if need_summary or need_facts:
                jobs.append(
                    partial(
                        self._chunk,
                        chat.id,
                        rng,
                        need_summary,
                        need_facts,
                        report,
                        chunk_text,
                        extracted.get(rng, set()),
                        found,
                        read,
                        in_hand,
                    )
                )
        with report.timed("chunks"):
            await _bounded(jobs, self.config.compaction_concurrency * 2)
        await self._pin(chat.id, found, read, report)
        if said:
            said = (await asyncio.to_thread(self._dated, None, said, []))[1]
        await self._profile(chat.id, found + (said or []), report)
        if not facts_only:
            with report.timed("metas"):
                await self._metas(chat, report, chunks, chunk_text, only)

    async def _metas(
        self,
        chat: Chat,
        report: CompactionReport,
        chunks: list[MessageRange],
        chunk_text: dict[MessageRange, str],
        only: MessageRange | None,
    ) -> None:
        metas_done = {s.range for s in await self.store.list_summaries(chat.id, SummaryLevel.META)}
        for span, group in meta_ranges(chunks, self.config.meta_every):
            forced = only is not None and any(only.contains(r) for r in group)
            if (forced or span not in metas_done) and all(r in chunk_text for r in group):
                text = await self.summarizer.meta_summary(
                    [chunk_text[r] for r in group], self.config.meta_summary_token_cap
                )
                text = truncate_to_tokens(text, self.config.meta_summary_token_cap)
                (embedded,) = await embed_texts(self.embedder, [text])
                await self.store.upsert_summary(chat.id, SummaryLevel.META, span, embedded)
                report.meta_summaries += 1

    async def _chunk(
        self,
        chat_id: str,
        rng: MessageRange,
        need_summary: bool,
        need_facts: bool,
        report: CompactionReport,
        chunk_text: dict[MessageRange, str],
        forgotten: set[str],
        found: list[PinCandidate],
        read: list[Turn],
        in_hand: dict[int, Turn],
    ) -> None:
        held = [in_hand[seq] for seq in range(rng.start, rng.end + 1) if seq in in_hand]
        turns = (
            held if len(held) == rng.end - rng.start + 1 else await self.store.load_turns(chat_id, rng.start, rng.end)
        )
        summary_call = (
            self.summarizer.chunk_summary(turns, self.config.chunk_summary_token_cap) if need_summary else _none()
        )
        facts_call = self.summarizer.facts(turns) if need_facts else _none()
        # the pins are detected with the facts: once per range, and again when it is regenerated
        pins_call = self.summarizer.pins(turns) if need_facts and self.config.auto_pins else _none()
        summary, facts, pins = await asyncio.gather(summary_call, facts_call, pins_call)
        if facts or pins:
            facts, pins = await asyncio.to_thread(self._dated, facts, pins, turns)
        found += pins or []
        read += turns
        if facts:
            facts = [line for line in facts if line not in forgotten]
        texts = []
        if summary is not None:
            texts.append(truncate_to_tokens(summary.text, self.config.chunk_summary_token_cap))
        if facts:
            texts.append(format_fact_lines(facts))
        embedded = await embed_texts(self.embedder, texts)
        if summary is not None:
            stored = await self.store.upsert_summary(
                chat_id, SummaryLevel.CHUNK, rng, embedded[0], importance=summary.importance
            )
            chunk_text[rng] = stored.text
            report.chunk_summaries += 1
        if facts is not None:
            await self.store.upsert_facts(chat_id, rng, facts, embedded[-1] if facts else None)
            report.fact_blocks += 1

    def _dated(
        self, facts: list[str] | None, pins: list[PinCandidate] | None, turns: list[Turn]
    ) -> tuple[list[str] | None, list[PinCandidate] | None]:
        """Facts and pin candidates with their relative dates made absolute: a pin's from its turn,
        a fact's from the turn of the range it most likely comes from."""
        if self.dates is None:
            return facts, pins
        dates = self.dates
        if facts:
            facts = [dates.dated(line, said_in(line, turns).created_at) for line in facts]
        if pins:
            pins = [replace(p, content=dates.dated(p.content, p.source.created_at)) for p in pins]
        return facts, pins

    async def _pin(self, chat_id: str, found: list[PinCandidate], read: list[Turn], report: CompactionReport) -> None:
        """Pin what the detections found that no pin says yet (forgotten pins count: a fact the user
        had forgotten is not pinned again), and give unsourced `remember` pins their turn."""
        if not found and not read:
            return
        existing = await self.store.list_pins(chat_id) + await self.store.list_pins(chat_id, forgotten=True)
        added = await self.store.add_new_pins(
            new_auto_pins(chat_id, sorted(found, key=lambda c: c.source.seq), existing)
        )
        report.auto_pins += len(added)
        for pin in find_sources([p for p in existing if p.pin_type == "manual"], read):
            await self.store.add_pin(pin)

    async def _profile(self, chat_id: str, found: list[PinCandidate], report: CompactionReport) -> None:
        if not found or not self.config.profile_auto:
            return
        fresh = new_profile_entries(
            chat_id, sorted(found, key=lambda c: c.source.seq), await self.store.list_profile(history=True)
        )
        report.profile_entries += len(await self.store.save_profile(fresh))


async def _none() -> None:
    return None


@contextmanager
def _offline_noted(report: CompactionReport) -> Iterator[None]:
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


async def _bounded(jobs: list[Callable[[], Awaitable[None]]], limit: int) -> None:
    """Run the jobs at most `limit` at a time; the first failure cancels the rest and is raised."""
    semaphore = asyncio.Semaphore(limit)

    async def run(job: Callable[[], Awaitable[None]]) -> None:
        async with semaphore:
            await job()

    async with asyncio.TaskGroup() as group:
        for job in jobs:
            group.create_task(run(job))


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
