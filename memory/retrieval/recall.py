"""Recall: what was said or kept about something, found by meaning, by words and by date.

Each text ranks on its own, in one chat or over every chat (so several windows of one chat may
come before another chat). A text's score fuses:
- meaning: its similarity to the request;
- words: `recall_words_weight` times the bm25 of the best turn it holds relative to the request's
  best turn (a turn found by its words alone, from the keyword index, scores by its words: "what
  was the name of that restaurant in Lyon?" finds the turn that names it, which a summary may
  have left out);
- dates: across chats, `recall_date_weight` for what was said in a chat active on the day (or
  week, month) the request names ("what did I say on 8 May", "last week");
- neighbouring turns: a window of what was said takes `recall_neighbour_weight` of the score of
  the better window next to it, since what answers a request often sits beside the turn that
  names it (a question and its reply).
A summary, facts or a pin scores by its similarity. A result inside one already kept (a turn in a
window) is left out, and results next to each other in a chat are joined into one run of turns
of at most `recall_span_turns`, so the answer does not spend two places on one exchange. Each
recalled turn or run carries its text with who said it and the moment it was said, so "when did
I ..." has an answer.

Measured on LoCoMo (bench/locomo_recall.py; docs/design/recall.md has the figures), this put the
evidence turn among 5 results far more often than fusing one best text per chat, or a chat's
summaries and facts, with the words by rank. Chat switching never uses this; it decides by
meaning alone.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Literal, Protocol, TypeVar

from parla.kernel.tasks import cancel_and_wait
from parla.records.embedding import EmbeddedText, Embedder, embed_texts, normalize_rows
from parla.records.turn import MessageRange, utcnow

from ..config import MemoryConfig
from ..errors import EmptyRequest
from ..language.dates import mentioned_date
from ..language.words import answer_words
from ..store.protocol import ChatRecords, MemoryRecords, SearchIndex, TextMatch, TurnMatch

RecalledKind = Literal["turn", "pin", "facts", "chunk", "meta", "summary_text", "turns", "title"]

# A recalled turn's text is cut to this many characters: it goes back to the model as a tool
# answer, and one long monologue must not crowd out the other results.
MAX_TEXT = 600
# Over every chat: chats read by meaning, texts of each, and turns read by words (in one chat too). Deep enough that
# a text close in meaning but not the closest, or a turn with a rare word, can still rise (on LoCoMo the evidence
# window was often a chat's 9th to 16th closest).
_CHATS = 20
_TEXTS_PER_CHAT = 16
_WORD_TURNS = 100
# Inside one chat: its texts read by meaning (it has few).
_CHAT_TEXTS = 40
# A date the request names counts for chats active up to a day around it (time zones, late nights).
_DATE_SLACK = timedelta(days=1)
_SAID = ("turn", "turns")
A = TypeVar("A")
B = TypeVar("B")


@dataclass(frozen=True)
class Recalled:
    """One thing recalled: its chat, the turns it comes from (None for a pin, the chat's whole
    description or its title) and its text."""

    chat_id: str
    kind: RecalledKind
    text: str
    range: MessageRange | None = None
    title: str | None = None
    last_activity_at: datetime | None = None
    said_at: datetime | None = None  # of a turn or a window (its first turn): when it was said


def _spoken(role: str, text: str) -> str:
    """A turn as recall answers it: who said it and what, cut to `MAX_TEXT`."""
    text = text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "…"
    return f"{'User' if role == 'user' else 'Assistant'}: {text}"


def _recalled(
    chat_id: str, found: TextMatch, title: str | None = None, last_activity_at: datetime | None = None
) -> Recalled:
    """A text found by meaning. The window before the first turn holds the chat's title: it is
    the title, not a turn (it has no number people could look up)."""
    if found.ref.shown_kind == "title":
        return Recalled(chat_id, "title", found.text, None, title, last_activity_at)
    return Recalled(chat_id, found.ref.kind, found.text, found.ref.range, title, last_activity_at)


def _turn(m: TurnMatch) -> Recalled:
    return Recalled(
        m.chat_id, "turn", _spoken(m.role, m.text), MessageRange(start=m.seq, end=m.seq), m.title, m.last_activity_at
    )


class RecallStore(SearchIndex, ChatRecords, MemoryRecords, Protocol):
    """What recall reads: the search index, and beside it the turns of what it found and (inside
    one chat) the chat's pins."""


class Recall:
    def __init__(self, store: RecallStore, embedder: Embedder, config: MemoryConfig) -> None:
        self.store = store
        self.embedder = embedder
        self.results = config.recall_results
        self.words_weight = config.recall_words_weight
        self.date_weight = config.recall_date_weight
        self.neighbour_weight = config.recall_neighbour_weight
        self.span_turns = config.recall_span_turns

    async def recall(self, request: str, chat_id: str | None, now: datetime | None = None) -> list[Recalled]:
        """The best `results` things recalled about `request`, in chat `chat_id` or (None) in
        every chat; `now` reads the dates the request names ("yesterday")."""
        request = request.strip()
        if not request:
            raise EmptyRequest()
        (query,) = await embed_texts(self.embedder, [request], "query")
        # the two searches at once: the SQLite store runs the word search on a connection of its
        # own (SQLite leaves the interpreter's lock while it works), Supabase answers both requests
        by_words, (meaning, dated) = await _together(
            self.store.search_words(answer_words(request), _WORD_TURNS, chat_id),
            self._by_meaning(query, request, chat_id, now),
        )
        return await self._said(self._ranked(meaning, by_words, dated))

    async def _by_meaning(
        self, query: EmbeddedText, request: str, chat_id: str | None, now: datetime | None
    ) -> tuple[list[tuple[float, Recalled]], set[str]]:
        """The texts close in meaning, each with its similarity, and (across chats) the chats
        active on the date the request names."""
        if chat_id is not None:
            meaning = [
                (t.similarity, _recalled(chat_id, t)) for t in await self.store.search_chat(query, chat_id, _CHAT_TEXTS)
            ]
            return meaning + await self._pins(query, chat_id), set()
        matches = await self.store.search(query, _CHATS, texts_per_chat=_TEXTS_PER_CHAT)
        dated: set[str] = set()
        if span := mentioned_date(request, now or utcnow()):
            dated = {m.chat_id for m in matches if span.overlaps(m.created_at, m.last_activity_at, _DATE_SLACK)}
        meaning = [
            (t.similarity, _recalled(m.chat_id, t, m.title, m.last_activity_at)) for m in matches for t in m.texts
        ]
        return meaning, dated

    async def _pins(self, query: EmbeddedText, chat_id: str) -> list[tuple[float, Recalled]]:
        pins = await self.store.list_pins(chat_id)
        vectors = normalize_rows(await self.embedder.embed([p.content for p in pins], "document")) if pins else None
        return [
            (
                float(vectors[i] @ query.vector),
                Recalled(
                    chat_id,
                    "pin",
                    f"(pinned) {p.content}",
                    None if p.source_seq is None else MessageRange(start=p.source_seq, end=p.source_seq),
                ),
            )
            for i, p in enumerate(pins)
            if vectors is not None
        ]

    def _ranked(
        self, meaning: list[tuple[float, Recalled]], by_words: list[TurnMatch], dated: set[str]
    ) -> list[Recalled]:
        best = max((m.score for m in by_words), default=0.0) or 1.0
        said = {(m.chat_id, m.seq): m.score / best for m in by_words}
        scored: dict[Recalled, float] = {}
        for similarity, r in meaning:
            words = (
                max(said.get((r.chat_id, seq), 0.0) for seq in range(r.range.start, r.range.end + 1))
                if r.kind == "turns" and r.range is not None
                else 0.0
            )
            scored[r] = similarity + self.words_weight * words + self.date_weight * (r.chat_id in dated)
        self._with_neighbours(scored)
        for m in by_words:
            date = self.date_weight * (m.chat_id in dated)
            scored.setdefault(_turn(m), self.words_weight * said[(m.chat_id, m.seq)] + date)
        kept: list[Recalled] = []
        for r in sorted(scored, key=lambda r: -scored[r]):
            for k in kept:  # a window that overlaps a kept run too long to join: only its own turns
                r = _beyond(r, k)
            if any(_inside(r, k) for k in kept):
                continue
            beside = next((i for i, k in enumerate(kept) if self._joinable(r, k)), None)
            if beside is not None:
                kept[beside] = _joined(kept[beside], r)
                continue
            kept.append(r)
            if len(kept) == self.results:
                break
        return kept

    def _with_neighbours(self, scored: dict[Recalled, float]) -> None:
        """Each window of what was said gains a share of the better score of the windows just
        before and after it (scores as they were before any gain)."""
        if not self.neighbour_weight:
            return
        windows = {(r.chat_id, r.range.start): v for r, v in scored.items() if r.kind == "turns" and r.range}
        for r, v in list(scored.items()):
            if r.kind == "turns" and r.range is not None:
                beside = (windows.get((r.chat_id, r.range.start + step), 0.0) for step in (-1, 1))
                scored[r] = v + self.neighbour_weight * max(beside)

    def _joinable(self, r: Recalled, kept: Recalled) -> bool:
        """`r` and `kept` are turns of one chat that touch, and together no longer than a span."""
        if r.chat_id != kept.chat_id or r.range is None or kept.range is None:
            return False
        if r.kind not in _SAID or kept.kind not in _SAID:
            return False
        touching = r.range.start <= kept.range.end + 1 and kept.range.start <= r.range.end + 1
        joined = max(r.range.end, kept.range.end) - min(r.range.start, kept.range.start) + 1
        return touching and joined <= self.span_turns

    async def _said(self, found: list[Recalled]) -> list[Recalled]:
        """The results, each turn and run of turns with its text as said (who said each turn) and
        the moment its first turn was said."""

        async def read(r: Recalled) -> Recalled:
            if r.kind not in _SAID or r.range is None:
                return r
            turns = await self.store.load_turns(r.chat_id, r.range.start, r.range.end)
            if not turns:
                return r
            text = "\n".join(_spoken(t.role, t.text) for t in turns if t.text.strip())
            return replace(r, text=text or r.text, said_at=turns[0].created_at)

        return list(await asyncio.gather(*(read(r) for r in found)))


async def _together(first: Awaitable[A], second: Awaitable[B]) -> tuple[A, B]:
    """Both results; when one fails the other is cancelled (store operations are safe to cancel)
    and the failure raised as it is."""
    tasks = (asyncio.ensure_future(first), asyncio.ensure_future(second))
    try:
        return await tasks[0], await tasks[1]
    finally:
        await cancel_and_wait(*tasks)


def _joined(kept: Recalled, r: Recalled) -> Recalled:
    """One run of turns from two that touch; its text is read again from the turns."""
    assert kept.range is not None and r.range is not None
    run = MessageRange(start=min(r.range.start, kept.range.start), end=max(r.range.end, kept.range.end))
    return replace(kept, kind="turns", range=run)


def _beyond(r: Recalled, kept: Recalled) -> Recalled:
    """`r` without the turns of `kept` that it overlaps at one end (neither is inside the other)."""
    if r.chat_id != kept.chat_id or r.kind not in _SAID or kept.kind not in _SAID or not r.range or not kept.range:
        return r
    if kept.range.start <= r.range.start <= kept.range.end < r.range.end:
        return replace(r, range=MessageRange(start=kept.range.end + 1, end=r.range.end))
    if r.range.start < kept.range.start <= r.range.end <= kept.range.end:
        return replace(r, range=MessageRange(start=r.range.start, end=kept.range.start - 1))
    return r


def _inside(r: Recalled, kept: Recalled) -> bool:
    """`r` says nothing `kept` does not: the same chat's turns, within its range."""
    return (
        r.chat_id == kept.chat_id
        and r.range is not None
        and kept.range is not None
        and kept.kind in ("turn", "turns")
        and kept.range.start <= r.range.start
        and r.range.end <= kept.range.end
    )
