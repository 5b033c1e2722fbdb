"""Recall: what was said or kept about something, found by meaning and by words.

Two rankings are made and fused by rank (reciprocal rank fusion: each result scores the sum of
1 / (k + its rank) over the rankings it is in), because a similarity and a bm25 score are on
scales that cannot be added:
- by meaning, the embedding search: in one chat, its pins, fact lines and summaries against the
  request; over every chat, each chat's best-matching embedded text;
- by words, the keyword index of every turn (bm25): "what was the name of that restaurant in
  Lyon?" finds the turn that names it, which a summary may have left out.
At equal fused score a turn comes first: it is what was said, not a retelling. Chat switching
never uses this; it decides by meaning alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
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
    def __init__(self, store: ChatStore, embedder: Embedder, results: int, rrf_k: float) -> None:
        self.store = store
        self.embedder = embedder
        self.results = results
        self.rrf_k = rrf_k

    async def recall(self, request: str, chat_id: str | None) -> list[Recalled]:
        """The best `results` things recalled about `request`, in chat `chat_id` or (None) in
        every chat."""
        request = request.strip()
        if not request:
            raise EmptyRequest()
        fetch = 4 * self.results  # deeper than shown, so an item ranked by both lists can rise
        words = [_turn(m) for m in await self.store.search_words(query_words(request), fetch, chat_id)]
        meaning = await (self._in_chat(request, chat_id, fetch) if chat_id else self._everywhere(request, fetch))
        return fuse([words, meaning], self.rrf_k)[: self.results]

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

    async def _everywhere(self, request: str, fetch: int) -> list[Recalled]:
        (query,) = await embed_texts(self.embedder, [request], "query")
        return [
            Recalled(m.chat_id, best.ref.kind, best.text, best.ref.range, m.title, m.last_activity_at)
            for m in await self.store.search(query, fetch)
            for best in m.texts[:1]
        ]
