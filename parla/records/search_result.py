"""What a chat search answers (`memory/retrieval/search.py` makes it): the decision, why, and the ranked
candidates with the figures behind each. Kept apart from the search (no numpy, no embedder) so the
command line and the control socket can read a running daemon's answer without loading either."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel

Decision = Literal["switch", "ambiguous", "none"]


class Candidate(BaseModel):
    chat_id: str
    title: str | None
    score: float
    match: float  # the best text's similarity and word score, averaged
    similarity: float  # that text's embedding similarity
    words: float  # that text's word score
    date: float
    recency: float
    last_activity_at: datetime
    matched_kind: str
    matched_range: str | None
    matched_text: str
    matched_words: list[str]


class SearchResult(BaseModel):
    query: str
    decision: Decision
    reason: str
    candidates: list[Candidate]
    # why the request was answered by words and titles alone (it could not be embedded), or None
    by_words: str | None = None

    @property
    def winner(self) -> Candidate | None:
        return self.candidates[0] if self.decision == "switch" else None
