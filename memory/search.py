"""Chat search by meaning: which chat does a spoken request mean?

The request is embedded as a query and matched against every embedded text of every chat (its
summary text, chunk and meta summaries, fact blocks); each chat counts with its best match. The
score adds a recency bonus that halves every `search_recency_half_life_days`. The decision:
- `none`: no chat's best similarity reaches the minimum;
- `switch`: the top chat leads the next eligible one by at least the margin;
- `ambiguous`: otherwise, with the few candidates close to the top for the model to ask about.
No keyword rule takes part: only the embeddings and the timestamps.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel

from parla.memory.config import MemoryConfig
from parla.memory.embedding import Embedder, embed_texts
from parla.memory.errors import EmptyRequest
from parla.memory.store import ChatMatch, ChatStore
from parla.memory.turn import utcnow

Decision = Literal["switch", "ambiguous", "none"]

# Chats fetched by similarity before recency re-ranks them: the recency bonus is small next to
# similarity, so a chat outside this many cannot reach the top few.
_FETCH = 20


class Candidate(BaseModel):
    chat_id: str
    title: str | None
    score: float
    similarity: float
    recency: float
    last_activity_at: datetime
    matched_kind: str
    matched_text: str


class SearchResult(BaseModel):
    query: str
    decision: Decision
    candidates: list[Candidate]

    @property
    def winner(self) -> Candidate | None:
        return self.candidates[0] if self.decision == "switch" else None


class Thresholds(BaseModel):
    min_similarity: float
    switch_margin: float
    max_candidates: int
    recency_weight: float
    half_life_days: float

    @classmethod
    def of(cls, config: MemoryConfig, embedder: Embedder) -> Thresholds:
        return cls(
            min_similarity=(
                config.search_min_similarity
                if config.search_min_similarity is not None
                else embedder.default_min_similarity
            ),
            switch_margin=(
                config.search_switch_margin
                if config.search_switch_margin is not None
                else embedder.default_switch_margin
            ),
            max_candidates=config.search_max_candidates,
            recency_weight=config.search_recency_weight,
            half_life_days=config.search_recency_half_life_days,
        )


def rank(query: str, matches: list[ChatMatch], thresholds: Thresholds, now: datetime) -> SearchResult:
    candidates = []
    for m in matches:
        age_days = max(0.0, (now - m.last_activity_at).total_seconds() / 86400)
        recency = 0.5 ** (age_days / thresholds.half_life_days)
        candidates.append(
            Candidate(
                chat_id=m.chat_id,
                title=m.title,
                score=round(m.similarity + thresholds.recency_weight * recency, 6),
                similarity=round(m.similarity, 6),
                recency=round(recency, 6),
                last_activity_at=m.last_activity_at,
                matched_kind=m.matched.kind,
                matched_text=m.matched_text,
            )
        )
    candidates.sort(key=lambda c: (-c.score, c.chat_id))
    eligible = [c for c in candidates if c.similarity >= thresholds.min_similarity]
    if not eligible:
        return SearchResult(query=query, decision="none", candidates=candidates)
    top = eligible[0]
    if len(eligible) == 1 or top.score - eligible[1].score >= thresholds.switch_margin:
        return SearchResult(query=query, decision="switch", candidates=candidates)
    close = [c for c in eligible if top.score - c.score < 2 * thresholds.switch_margin]
    return SearchResult(query=query, decision="ambiguous", candidates=close[: thresholds.max_candidates])


class ChatSearch:
    def __init__(self, store: ChatStore, embedder: Embedder, config: MemoryConfig) -> None:
        self.store = store
        self.embedder = embedder
        self.thresholds = Thresholds.of(config, embedder)

    async def search(self, request: str, limit: int = 10, now: datetime | None = None) -> SearchResult:
        request = request.strip()
        if not request:
            raise EmptyRequest()
        (query,) = await embed_texts(self.embedder, [request], "query")
        matches = await self.store.search(query, max(limit, _FETCH))
        result = rank(request, matches, self.thresholds, now or utcnow())
        return result.model_copy(update={"candidates": result.candidates[:limit]})
