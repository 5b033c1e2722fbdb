"""What a chat search answers (`memory/retrieval/search.py` makes it): the decision, why, and the ranked
candidates with the figures behind each. Kept apart from the search (no numpy, no embedder) so the
command line and the control socket can read a running daemon's answer without loading either."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel

from .turn import MessageRange

Decision = Literal["switch", "ambiguous", "none"]

# A searched or recalled text, named as the guides and `parla show` name it.
_NAMES = {
    "title": "the title",
    "summary_text": "the description",
    "chunk": "the chunk summary",
    "meta": "the meta summary",
    "facts": "the facts",
}


def found_in(kind: str, turns: MessageRange | None) -> str:
    """Where a found text comes from, in words: `the description`, `turns 3-5`, `turn 4`, `the
    chunk summary of turns 1-10`, `a pin (turn 7)`. `kind` is a search's `matched_kind` or a
    recalled text's kind."""
    if kind in ("turn", "turns") and turns is not None:
        return f"{'turn' if turns.start == turns.end else 'turns'} {turns.label}"
    if kind == "pin":
        return f"a pin (turn {turns.label})" if turns else "a pin"
    name = _NAMES.get(kind, kind)
    return f"{name} of turns {turns.label}" if turns else name


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

    @property
    def matched_where(self) -> str:
        """What matched, in words (`the description`, `turns 3-5`)."""
        return found_in(self.matched_kind, MessageRange.parse(self.matched_range) if self.matched_range else None)


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
