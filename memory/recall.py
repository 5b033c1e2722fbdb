"""Recall: what was said or kept about something, found by meaning and by words.

Each text ranks on its own, in one chat or over every chat (so several windows of one chat may
come before another chat): its similarity to the request, plus `recall_words_weight` times the
bm25 of the best turn it holds relative to the request's best turn. A window of what was said
that is both close in meaning and says the request's rare words comes first; a turn found by its
words alone (the keyword index: "what was the name of that restaurant in Lyon?" finds the turn
that names it, which a summary may have left out) scores by its words; a summary, facts or a pin
by its similarity. A result inside one already kept (a turn in a window) is left out. Each
recalled turn or window carries the moment it was said, so "when did I ..." has an answer.

Measured on LoCoMo (bench/locomo_recall.py), this put the evidence turn among 5 results far more
often than fusing one best text per chat, or a chat's summaries and facts, with the words by rank.
Chat switching never uses this; it decides by meaning alone.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Literal

from parla.memory.embedding import EmbeddedText, Embedder, embed_texts, normalize_rows
from parla.memory.errors import EmptyRequest
from parla.memory.store import ChatStore, TurnMatch
from parla.memory.turn import MessageRange
from parla.memory.words import query_words

RecalledKind = Literal["turn", "pin", "facts", "chunk", "meta", "summary_text", "turns"]

# A recalled turn's text is cut to this many characters: it goes back to the model as a tool
# answer, and one long monologue must not crowd out the other results.
MAX_TEXT = 600
# Over every chat: chats read by meaning, texts of each, and turns read by words (in one chat too). Deep enough that
# a text close in meaning but not the closest, or a turn with a rare word, can still rise.
_CHATS = 20
_TEXTS_PER_CHAT = 8
_WORD_TURNS = 100
# Inside one chat: its texts read by meaning (it has few).
_CHAT_TEXTS = 40


@dataclass(frozen=True)
class Recalled:
    """One thing recalled: its chat, the turns it comes from (None for a pin or the chat's whole
    description) and its text."""

    chat_id: str
    kind: RecalledKind
    text: str
    range: MessageRange | None = None
    title: str | None = None
    last_activity_at: datetime | None = None
    said_at: datetime | None = None  # of a turn or a window (its first turn): when it was said


def _turn(m: TurnMatch) -> Recalled:
    speaker = "User" if m.role == "user" else "Assistant"
    text = m.text if len(m.text) <= MAX_TEXT else m.text[: MAX_TEXT - 1] + "…"
    return Recalled(
        m.chat_id, "turn", f"{speaker}: {text}", MessageRange(start=m.seq, end=m.seq), m.title, m.last_activity_at
    )


class Recall:
    def __init__(self, store: ChatStore, embedder: Embedder, results: int, words_weight: float) -> None:
        self.store = store
        self.embedder = embedder
        self.results = results
        self.words_weight = words_weight

    async def recall(self, request: str, chat_id: str | None) -> list[Recalled]:
        """The best `results` things recalled about `request`, in chat `chat_id` or (None) in
        every chat."""
        request = request.strip()
        if not request:
            raise EmptyRequest()
        (query,) = await embed_texts(self.embedder, [request], "query")
        by_words = await self.store.search_words(query_words(request), _WORD_TURNS, chat_id)
        if chat_id is None:
            meaning = [
                (t.similarity, Recalled(m.chat_id, t.ref.kind, t.text, t.ref.range, m.title, m.last_activity_at))
                for m in await self.store.search(query, _CHATS, texts_per_chat=_TEXTS_PER_CHAT)
                for t in m.texts
            ]
        else:
            meaning = [
                (t.similarity, Recalled(chat_id, t.ref.kind, t.text, t.ref.range))
                for t in await self.store.search_chat(query, chat_id, _CHAT_TEXTS)
            ] + await self._pins(query, chat_id)
        return await self._dated(self._ranked(meaning, by_words))

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

    def _ranked(self, meaning: list[tuple[float, Recalled]], by_words: list[TurnMatch]) -> list[Recalled]:
        best = max((m.score for m in by_words), default=0.0) or 1.0
        said = {(m.chat_id, m.seq): m.score / best for m in by_words}
        scored: dict[Recalled, float] = {}
        for similarity, r in meaning:
            words = (
                max(said.get((r.chat_id, seq), 0.0) for seq in range(r.range.start, r.range.end + 1))
                if r.kind == "turns" and r.range is not None
                else 0.0
            )
            scored[r] = similarity + self.words_weight * words
        for m in by_words:
            scored.setdefault(_turn(m), self.words_weight * said[(m.chat_id, m.seq)])
        kept: list[Recalled] = []
        for r in sorted(scored, key=lambda r: -scored[r]):
            if not any(_inside(r, k) for k in kept):
                kept.append(r)
            if len(kept) == self.results:
                break
        return kept

    async def _dated(self, found: list[Recalled]) -> list[Recalled]:
        """The results, each turn and window with the moment its first turn was said."""

        async def date(r: Recalled) -> Recalled:
            if r.kind not in ("turn", "turns") or r.range is None:
                return r
            turns = await self.store.load_turns(r.chat_id, r.range.start, r.range.start)
            return replace(r, said_at=turns[0].created_at) if turns else r

        return list(await asyncio.gather(*(date(r) for r in found)))


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
