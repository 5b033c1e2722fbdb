"""The most a word can add to a turn's bm25 in the SQLite store's word index, kept per word.

MaxScore's pruning (`sqlite_search._best_across`) stops scoring turns once what the words not yet
scored could add is below the best scores found. Bounding a word by 2.2 idf (what bm25 allows for
any number of occurrences) is about twice what it really adds: on a 5,000-chat store that let 18
of 76 questions stop after their rarest word, the real figure all 76. The real figure is FTS5's
bm25 of the word alone, best over its turns: costly to find (every turn of the word scored), so
it is kept, per word, in this process, and brought up to date as turns come:

- a word adds idf × tf (k1 + 1) / (tf + k1 (1 − b + b · len / avglen)) to a turn
  (https://sqlite.org/fts5.html#the_bm25_function); the part after idf, its impact, is kept: the
  idf is computed afresh from the word's count of turns;
- when the average length of a turn grows by a factor r, no turn's impact grows by more than r
  (each term of the denominator shrinks by at most r), so the kept impact is scaled by it;
- turns added since are scored for the word alone (FTS5 seeks to them by rowid);
- when a turn was removed (a chat deleted), everything kept is dropped: a removed turn could let
  a later one take its rowid.

The average length and the count of turns are FTS5's own, from its averages record (the row of
rowid 1 in the index's `_data` table: varints of the row count and each column's token count).
"""

from __future__ import annotations

import math
import sqlite3
from dataclasses import dataclass

# rounding, and a count of turns for a word that fts5vocab gives and bm25 finds alike
_MARGIN = 1.001


@dataclass
class _Kept:
    impact: float  # most over the turns up to `through` (a bm25 share per unit of idf)
    avglen: float  # the average length it was found at
    through: int  # the last rowid it covers


@dataclass(frozen=True)
class _IndexState:
    rows: int
    avglen: float
    last: int  # the highest rowid
    last_turn: tuple[str, int] | None  # its chat and turn


class WordBounds:
    """Used only in the thread of the connection that searches words: `start` at each search,
    before `most_added`."""

    def __init__(self) -> None:
        self._kept: dict[str, _Kept] = {}
        self._since: _IndexState | None = None  # the index when the kept figures were started
        self._now: _IndexState | None = None

    def start(self, db: sqlite3.Connection) -> None:
        """Read the index as this search sees it; drop what is kept if a turn was removed."""
        self._now = _index_state(db)
        if not self._unchanged_but_appended(db, self._now):
            self._kept.clear()
            self._since = self._now

    def kept(self, word: str) -> bool:
        return word in self._kept

    def most_added(self, db: sqlite3.Connection, word: str, doc_count: int) -> float:
        """More than `word`, found in `doc_count` turns, can add to the bm25 of any turn now."""
        state = self._now
        assert state is not None, "start() first"
        idf = math.log((state.rows - doc_count + 0.5) / (doc_count + 0.5))
        kept = self._kept.get(word)
        if kept is None:
            impact = _best_impact(db, word, idf, after=None)
        elif kept.through == state.last and kept.avglen == state.avglen:
            impact = kept.impact
        else:
            grown = max(1.0, state.avglen / kept.avglen) if kept.avglen > 0 else math.inf
            impact = max(kept.impact * grown, _best_impact(db, word, idf, after=kept.through))
        self._kept[word] = _Kept(impact, state.avglen, state.last)
        return idf * impact * _MARGIN

    def _unchanged_but_appended(self, db: sqlite3.Connection, state: _IndexState) -> bool:
        """No turn was removed since the kept figures were started: every turn then is still
        there under its rowid, and the others have higher ones."""
        since = self._since
        if since is None or state.last < since.last:
            return False
        (added,) = db.execute("SELECT count(*) FROM turn_words WHERE rowid > ?", (since.last,)).fetchone()
        return state.rows == since.rows + added and _turn_at(db, since.last) == since.last_turn


def _best_impact(db: sqlite3.Connection, word: str, idf: float, after: int | None) -> float:
    """The most `word` adds to a turn (after rowid `after`, or in all), per unit of idf."""
    query = '"' + word.replace('"', '""') + '"'
    ranks = db.execute(
        "SELECT bm25(turn_words) FROM turn_words WHERE turn_words MATCH ? AND rowid > ?",
        (query, -1 if after is None else after),
    ).fetchall()
    return -min((r[0] for r in ranks), default=0.0) / idf


def indexed_turns(db: sqlite3.Connection) -> tuple[int, int]:
    """The turns in the word index and their tokens, from FTS5's averages record: what bm25
    counts with, without counting rows."""
    row = db.execute("SELECT block FROM turn_words_data WHERE id = 1").fetchone()
    counts = _varints(bytes(row[0])) if row is not None and row[0] else [0]
    return counts[0], sum(counts[1:])


def _index_state(db: sqlite3.Connection) -> _IndexState:
    rows, tokens = indexed_turns(db)
    last_row = db.execute("SELECT rowid FROM turn_words ORDER BY rowid DESC LIMIT 1").fetchone()
    last = 0 if last_row is None else int(last_row[0])
    return _IndexState(rows, tokens / rows if rows else 0.0, last, _turn_at(db, last))


def _turn_at(db: sqlite3.Connection, rowid: int) -> tuple[str, int] | None:
    row = db.execute("SELECT chat_id, seq FROM turn_words WHERE rowid = ?", (rowid,)).fetchone()
    return None if row is None else (str(row[0]), int(row[1]))


def _varints(blob: bytes) -> list[int]:
    """SQLite's varints (FTS5 writes its records with them): big-endian 7 bits a byte, the high
    bit set on all but the last; a ninth byte gives all its 8 bits."""
    out, i = [], 0
    while i < len(blob):
        value = 0
        for n in range(9):
            byte = blob[i]
            i += 1
            if n == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if not byte & 0x80:
                break
        out.append(value)
    return out
