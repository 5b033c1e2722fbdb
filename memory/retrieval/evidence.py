"""How much of what a request says a chat's texts hold: the word stage of the chat search.

Each content word of the request carries information by how rare it is in the user's own windows
of what was said (`idf`: a name said in every chat carries little, "sunrise" a lot, a word said
nowhere the most). A text is credited, for each request word, the word's information times how
close the text's nearest word is to it (static word vectors: a word matches itself and its near
forms). Two rules keep that credit honest:

- A longer text holds any word more often by chance, so each word it holds is worth less: the
  chance a text of n words holds a word is about n / typical times a window's, which takes
  log(n / typical) from the word's information (nothing for a text no longer than a typical
  window). A summary or a fact block that holds every word of the request because it holds many
  words does not beat the turns it summarises.
- Evidence spread over neighbouring turns adds up: the windows of a chat that follow one another
  (up to `SPAN_TURNS` turns) are also read as one span, holding the words of all, at the cost of its
  length like any text.

The word score of a text is what it is credited over the request's whole information, so a word
no chat holds lowers every chat's score; a name no chat holds (`unknown_names`) tells the search
that nothing talked about it.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from parla.records.turn import MessageRange

from ..embedders.offline import WordTable
from ..language.requests import bare
from ..language.text import distinct_content_words
from ..store.protocol import TextMatch, WordCounts

# A request word "matched" (held, in the explanation): the text holds it or a word almost the same.
MATCHED = 0.85
# The most turns one span of neighbouring windows may cover.
SPAN_TURNS = 6


class RequestWords:
    """A request's content words, their vectors and their information from the user's word counts."""

    def __init__(
        self,
        words: list[str],
        counts: WordCounts,
        table: WordTable,
        names: frozenset[str] = frozenset(),
    ) -> None:
        self.words = words
        self.names = np.asarray([w in names for w in words], dtype=bool)
        self.table = table
        self.vectors = table.vectors(table.ids(words))
        if counts.windows:
            # +1 and +0.5 keep a word in no window finite and a word in every window near zero
            found = [min(counts.windows, counts.counts.get(w, 0) + counts.counts.get(w + "'s", 0)) for w in words]
            self.idf = np.asarray([max(0.0, math.log((counts.windows + 1) / (n + 0.5))) for n in found])
            self.unknown = np.asarray([n == 0 for n in found], dtype=bool)
        else:  # nothing indexed yet: every word alike, none unknown
            self.idf = np.ones(len(words))
            self.unknown = np.zeros(len(words), dtype=bool)
        self.information = float(self.idf.sum())

    def best(self, texts: Sequence[str]) -> tuple[np.ndarray, list[tuple[str, ...]]]:
        """For each text, each request word's best similarity to one of the text's words (a row
        per text), and the text's distinct words. The distinct words of all texts are compared
        with the request's in one product."""
        per_text = [_words_of(t) for t in texts]
        if not self.words or not texts:
            return np.zeros((len(texts), len(self.words))), per_text
        lengths = np.fromiter((len(ws) for ws in per_text), dtype=np.int64, count=len(per_text))
        flat = self.table.ids([w for ws in per_text for w in ws])
        self.vectors = self.table.vectors(self.table.ids(self.words))  # the table may have started again
        distinct, where = np.unique(flat, return_inverse=True)
        sims = np.clip(self.table.vectors(distinct) @ self.vectors.T, 0.0, 1.0)
        # every text's words one after another, then one row of zeros for the texts without words
        rows = np.vstack([sims[where], np.zeros((1, len(self.words)), dtype=sims.dtype)])
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        best = np.maximum.reduceat(rows, np.where(lengths > 0, starts, len(flat)), axis=0)
        best[lengths == 0] = 0.0
        return best, per_text

    def scores(self, best: np.ndarray, lengths: np.ndarray, typical: float) -> np.ndarray:
        """The share of the request's information each text holds: `best` has a row per text (each
        request word's best similarity in it), `lengths` its distinct words."""
        if not self.information:
            return np.zeros(len(best))
        penalty = np.log(np.maximum(lengths / typical, 1.0)) if typical > 0 else np.zeros(len(best))
        information = np.clip(self.idf[None, :] - penalty[:, None], 0.0, None)
        credited: np.ndarray = (information * best).sum(axis=1) / self.information
        return credited

    def held(self, best: np.ndarray) -> list[str]:
        return [w for w, b in zip(self.words, best, strict=True) if b >= MATCHED]

    def information_of(self, words: list[str]) -> float:
        """The information the request's `words` carry."""
        return float(sum(self.idf[i] for i, w in enumerate(self.words) if w in words))

    def unknown_names(self) -> list[str]:
        """The request's names that no window says."""
        return [w for w, n in zip(self.words, self.unknown & self.names, strict=True) if n]


@dataclass(frozen=True)
class Readings:
    """One chat's texts, each on its own, and the spans of its neighbouring windows: a row each.
    `shown` is the text shown for a row (of a span, its most similar window)."""

    shown: list[TextMatch]
    ranges: list[MessageRange | None]
    similarity: np.ndarray
    best: np.ndarray
    lengths: np.ndarray
    title: np.ndarray


def read_chat(texts: Sequence[TextMatch], best: np.ndarray, words: Sequence[tuple[str, ...]]) -> Readings:
    """Each text of one chat on its own, then each span of its neighbouring windows."""
    shown = list(texts)
    ranges = [t.ref.range for t in texts]
    rows = list(best)
    lengths = [len(w) for w in words]
    title = [t.ref.shown_kind == "title" for t in texts]
    windows = sorted(
        (i for i, t in enumerate(texts) if t.ref.kind == "turns" and not title[i] and t.ref.range is not None),
        key=lambda i: ranges[i].start,  # type: ignore[union-attr]
    )
    for at, first in enumerate(windows):
        start, end = ranges[first].start, ranges[first].end  # type: ignore[union-attr]
        held, row, most = set(words[first]), best[first], first
        for nxt in windows[at + 1 :]:
            r = ranges[nxt]
            assert r is not None
            if r.start > end + 1 or r.end - start + 1 > SPAN_TURNS:
                break
            held.update(words[nxt])
            row = np.maximum(row, best[nxt])
            end = max(end, r.end)
            most = nxt if texts[nxt].similarity > texts[most].similarity else most
            shown.append(texts[most])
            ranges.append(MessageRange(start=start, end=end))
            rows.append(row)
            lengths.append(len(held))
            title.append(False)
    return Readings(
        shown,
        ranges,
        np.asarray([t.similarity for t in shown]),
        np.vstack(rows) if rows else np.zeros((0, best.shape[1])),
        np.asarray(lengths, dtype=float),
        np.asarray(title, dtype=bool),
    )


def typical_length(texts: Sequence[TextMatch], words: Sequence[tuple[str, ...]]) -> float:
    """The median count of distinct words of the windows of what was said among `texts` (of all
    texts when there is no window)."""
    lengths = [
        len(w) for t, w in zip(texts, words, strict=True) if t.ref.kind == "turns" and t.ref.shown_kind != "title"
    ]
    lengths = lengths or [len(w) for w in words]
    return float(np.median(lengths)) if lengths else 0.0


@functools.lru_cache(maxsize=16384)
def _words_of(text: str) -> tuple[str, ...]:
    """A stored text's distinct words, possessives bare; stored texts come back search after
    search, so they are kept."""
    return tuple(sorted({bare(w) for w in distinct_content_words(text)}))
