"""Recall: what was said or kept about something, found by meaning and by words.

In one chat, two rankings are made and fused by rank (reciprocal rank fusion: each result scores
the sum of 1 / (k + its rank) over the rankings it is in):
- by meaning, the chat's pins, fact lines and summaries against the request;
- by words, the keyword index of the chat's turns (bm25): "what was the name of that restaurant in
  Lyon?" finds the turn that names it, which a summary may have left out.
At equal fused score a turn comes first: it is what was said, not a retelling.

Over every chat, each text ranks on its own (several windows of one chat may come before another
chat): a text's similarity to the request, plus `recall_words_weight` times the bm25 of the best
turn it holds relative to the request's best turn, so a window that is both close in meaning and
says the request's rare words comes first; a turn found by its words alone scores by its words.
A result inside one already kept (a turn in a window) is left out. Measured on LoCoMo
(bench/locomo_recall.py), this put the evidence turn among 5 results far more often than fusing
one best text per chat by rank. Each recalled turn or window carries the moment it was said.
Chat switching never uses this; it decides by meaning alone.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Literal

from parla.memory.embedding import Embedder, embed_texts, similarities
from parla.memory.errors import EmptyRequest
from parla.memory.forgetting import memory_items
from parla.memory.store import ChatStore, TurnMatch
from parla.memory.turn import MessageRange
from parla.memory.words import query_words

RecalledKind = Literal["turn", "pin", "facts", "chunk", "meta", "summary_text", "turns"]

# A recalled turn's text is cut to this many characters: it goes back to the model as a tool
# answer, and one long monologue must not crowd out the other results.
MAX_TEXT = 600
# Over every chat: chats read by meaning, texts of each, and turns read by words. Deep enough that
# a text close in meaning but not the closest, or a turn with a rare word, can still rise.
_CHATS = 50
_TEXTS_PER_CHAT = 8
_WORD_TURNS = 100


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


def fuse(rankings: Sequence[Sequence[Recalled]], k: float) -> list[Recalled]:
    """Reciprocal rank fusion; ties keep the order of first appearance (earlier rankings first)."""
    scores: dict[Recalled, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    order = {item: i for i, item in enumerate(scores)}
    return sorted(scores, key=lambda item: (-scores[item], order[item]))


def _turn(m: TurnMatch) -> Recalled:
    speaker = "User" if m.role == "user" else "Assistant"
    text = m.text if len(m.text) <= MAX_TEXT else m.text[: MAX_TEXT - 1] + "…"
    return Recalled(
        m.chat_id, "turn", f"{speaker}: {text}", MessageRange(start=m.seq, end=m.seq), m.title, m.last_activity_at
    )


class Recall:
    def __init__(
        self, store: ChatStore, embedder: Embedder, results: int, rrf_k: float, words_weight: float = 0.5
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.results = results
        self.rrf_k = rrf_k
        self.words_weight = words_weight

    async def recall(self, request: str, chat_id: str | None) -> list[Recalled]:
        """The best `results` things recalled about `request`, in chat `chat_id` or (None) in
        every chat."""
        request = request.strip()
        if not request:
            raise EmptyRequest()
        if chat_id is None:
            return await self._dated(await self._everywhere(request))
        fetch = 4 * self.results  # deeper than shown, so an item ranked by both lists can rise
        words = [_turn(m) for m in await self.store.search_words(query_words(request), fetch, chat_id)]
        meaning = await self._in_chat(request, chat_id, fetch)
        return await self._dated(fuse([words, meaning], self.rrf_k)[: self.results])

    async def _in_chat(self, request: str, chat_id: str, fetch: int) -> list[Recalled]:
        items = [
            Recalled(
                chat_id,
                "pin",
                f"(pinned) {i.content}",
                None if i.source_seq is None else MessageRange(start=i.source_seq, end=i.source_seq),
            )
            if i.kind == "pin"
            else Recalled(chat_id, "facts", i.content, i.range)
            for i in await memory_items(self.store, chat_id)
        ]
        items += [
            Recalled(chat_id, "meta" if s.level else "chunk", s.text, s.range)
            for s in await self.store.list_summaries(chat_id)
        ]
        scores = await similarities(self.embedder, request, [i.text for i in items])
        return [items[i] for i in scores.argsort()[::-1][:fetch]]

    async def _everywhere(self, request: str) -> list[Recalled]:
        (query,) = await embed_texts(self.embedder, [request], "query")
        by_words = await self.store.search_words(query_words(request), _WORD_TURNS)
        chats = await self.store.search(query, _CHATS, texts_per_chat=_TEXTS_PER_CHAT)
        best = max((m.score for m in by_words), default=0.0) or 1.0
        said = {(m.chat_id, m.seq): m.score / best for m in by_words}
        scored: dict[Recalled, float] = {}
        for chat in chats:
            for t in chat.texts:
                r = Recalled(chat.chat_id, t.ref.kind, t.text, t.ref.range, chat.title, chat.last_activity_at)
                words = (
                    max(said.get((chat.chat_id, seq), 0.0) for seq in range(t.ref.range.start, t.ref.range.end + 1))
                    if t.ref.kind == "turns" and t.ref.range is not None
                    else 0.0
                )
                scored[r] = t.similarity + self.words_weight * words
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
