"""The dual memory of a chat: every complete chunk of `chunk_size` messages gets a chunk summary
(with its importance) and, in parallel, a fact extraction and the auto-pin detection, all from the
raw messages; every `meta_every` chunk summaries get a meta summary. All are upserted per range
(auto pins by an id derived from the fact), so repeating a run changes nothing. What the
detections found becomes pins; what they found about the user, once the summarizer has checked
that each is a fact the user stated about themselves, and what the rules read in the user's turns
become profile entries (`pins_and_profile`)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from functools import partial

from parla.kernel.tokens import truncate_to_tokens
from parla.records.chat import Chat
from parla.records.embedding import Embedder, embed_texts
from parla.records.facts import format_fact_lines
from parla.records.summary import SummaryLevel
from parla.records.turn import MessageRange, Turn

from ..config import MemoryConfig
from ..language.absolute_dates import DateReading
from ..language.auto_pins import PinCandidate, said_in
from ..store.protocol import ChatsWithMemory
from ..summarizers import Summarizer
from .pins_and_profile import add_to_profile, dated, pin_found
from .report import CompactionReport


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


class DualMemory:
    def __init__(
        self,
        store: ChatsWithMemory,
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

    async def update(
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
        await pin_found(self.store, chat.id, found, read, report)
        about = [c for c in found if c.about_user]
        if about and self.config.profile_auto:
            # the summary model's statements are asked once more whether each is the user's
            about = await self.summarizer.about_user(sorted(about, key=lambda c: c.source.seq))
        await self.learn(chat.id, about, said or [], report)
        if not facts_only:
            with report.timed("metas"):
                await self._metas(chat, report, chunks, chunk_text, only)

    async def learn(
        self, chat_id: str, found: list[PinCandidate], said: list[PinCandidate], report: CompactionReport
    ) -> None:
        """What the user said about themselves joins the profile: statements `found` by the chunks'
        detection and checked, and the statements `said` that the rules read in their turns."""
        if said:
            said = await asyncio.to_thread(dated, self.dates, said)
        await add_to_profile(self.store, self.config, chat_id, found + said, report)

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
        return facts, dated(dates, pins) if pins else pins


async def _none() -> None:
    return None


async def _bounded(jobs: list[Callable[[], Awaitable[None]]], limit: int) -> None:
    """Run the jobs at most `limit` at a time; the first failure cancels the rest and is raised."""
    semaphore = asyncio.Semaphore(limit)

    async def run(job: Callable[[], Awaitable[None]]) -> None:
        async with semaphore:
            await job()

    async with asyncio.TaskGroup() as group:
        for job in jobs:
            group.create_task(run(job))
