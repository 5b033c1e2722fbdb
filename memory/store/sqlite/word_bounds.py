"""What the words of a question weigh in the SQLite store's word index, kept per word in the
store's file (the `word_bounds` table): how many turns hold the word, and the most it can add to
a turn's bm25.

MaxScore's pruning (`sqlite_search._best_across`) stops scoring turns once what the words not yet
scored could add is below the best scores found. Bounding a word by 2.2 idf (what bm25 allows for
any number of occurrences) is about twice what it really adds: on a 5,000-chat store that let 18
of 76 questions stop after their rarest word, the real figure all 76. The real figure is FTS5's
bm25 of the word alone, best over its turns; and the idf needs the word's count of turns, which
fts5vocab finds by walking the word's whole list of turns. Both cost a walk of every turn of a
common word (tens of thousands at 5,000 chats), so both are kept in the file, where a new
process (`parla recall` without a daemon, the daemon's first recall) finds them, and brought up
to date as turns come:

- a word adds idf × tf (k1 + 1) / (tf + k1 (1 − b + b · len / avglen)) to a turn
  (https://sqlite.org/fts5.html#the_bm25_function); the part after idf, its impact, is kept: the
  idf is computed afresh from the word's count of turns;
- each figure is kept with the last rowid it covers; the turns after it are counted or scored for
  the word alone (FTS5 seeks to them by rowid);
- when the average length of a turn grows by a factor r, no turn's impact grows by more than r
  (each term of the denominator shrinks by at most r), so the kept impact is scaled by it;
- a deleted chat takes its turns out of the index, and a turn added after may take a removed
  one's rowid: the trigger `word_bounds_forget` drops every figure in the deleting transaction.

A search writes the figures it found back in its own transaction: only when no other connection
wrote since its snapshot began and none is writing (it never waits), so a kept figure always
describes the index it was found in; otherwise they are found again by a later search.

The average length and the count of turns are FTS5's own, from its averages record (the row of
rowid 1 in the index's `_data` table: varints of the row count and each column's token count).
"""

from __future__ import annotations

import logging
import math
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

from .connection import BUSY_SLICE_MS

log = logging.getLogger("parla.memory")

# rounding, and a count of turns for a word that fts5vocab gives and bm25 finds alike
_MARGIN = 1.001


@dataclass
class _Kept:
    turns: int  # turns holding the word, up to rowid `through`
    through: int
    impact: float | None = None  # most over the turns up to `impact_through` (a bm25 share per unit of idf)
    impact_avglen: float = 0.0  # the average length it was found at
    impact_through: int = 0


class WordBounds:
    """One word search's view of the figures, inside its transaction: `counts` first, then
    `most_added` as the pruning asks, and `keep` at the end."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db
        self.rows, tokens = indexed_turns(db)
        self._avglen = tokens / self.rows if self.rows else 0.0
        last = db.execute("SELECT rowid FROM turn_words ORDER BY rowid DESC LIMIT 1").fetchone()
        self._last = 0 if last is None else int(last[0])
        self._kept: dict[str, _Kept] = {}
        self._changed: set[str] = set()

    def counts(self, words: Sequence[str]) -> dict[str, int]:
        """The turns holding each of `words` (those in none left out)."""
        wanted = sorted(set(words))
        marks = ",".join("?" * len(wanted))
        for row in self._db.execute(
            "SELECT word, turns, through, impact, impact_avglen, impact_through FROM word_bounds "
            f"WHERE word IN ({marks})",
            wanted,
        ):
            kept = _Kept(int(row[1]), int(row[2]), row[3], row[4] or 0.0, row[5] or 0)
            if kept.through < self._last:
                kept.turns += self._count_after(row[0], kept.through)
                kept.through = self._last
                self._changed.add(row[0])
            self._kept[row[0]] = kept
        missing = [w for w in wanted if w not in self._kept]
        if missing:
            marks = ",".join("?" * len(missing))
            for word, turns in self._db.execute(f"SELECT term, doc FROM turn_vocab WHERE term IN ({marks})", missing):
                self._kept[word] = _Kept(int(turns), self._last)
                self._changed.add(word)
        return {w: k.turns for w, k in self._kept.items() if k.turns}

    def kept(self, word: str) -> bool:
        """Whether the most `word` adds is known without scoring all its turns."""
        kept = self._kept.get(word)
        return kept is not None and kept.impact is not None

    def most_added(self, word: str, doc_count: int) -> float:
        """More than `word`, found in `doc_count` turns, can add to the bm25 of any turn now
        (after `counts`)."""
        kept = self._kept[word]
        idf = math.log((self.rows - doc_count + 0.5) / (doc_count + 0.5))
        if kept.impact is None:
            impact = self._best_impact(word, idf, after=None)
        elif kept.impact_through == self._last and kept.impact_avglen == self._avglen:
            return idf * kept.impact * _MARGIN
        else:
            grown = max(1.0, self._avglen / kept.impact_avglen) if kept.impact_avglen > 0 else math.inf
            impact = max(kept.impact * grown, self._best_impact(word, idf, after=kept.impact_through))
        kept.impact, kept.impact_avglen, kept.impact_through = impact, self._avglen, self._last
        self._changed.add(word)
        return idf * impact * _MARGIN

    def keep(self) -> None:
        """Write the figures found or brought up to date, when that needs no wait (see above)."""
        if not self._changed:
            return
        rows = [
            (w, k.turns, k.through, k.impact, k.impact_avglen if k.impact is not None else None, k.impact_through)
            for w, k in self._kept.items()
            if w in self._changed
        ]
        db = self._db
        db.execute("PRAGMA busy_timeout = 0")
        db.execute("PRAGMA query_only = OFF")
        try:
            db.executemany(
                "INSERT INTO word_bounds (word, turns, through, impact, impact_avglen, impact_through) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (word) DO UPDATE SET turns = excluded.turns, "
                "through = excluded.through, impact = excluded.impact, impact_avglen = excluded.impact_avglen, "
                "impact_through = excluded.impact_through",
                rows,
            )
        except sqlite3.OperationalError as e:  # another writer, a read-only file or a full disk
            log.debug("word figures of %s not kept: %s", [r[0] for r in rows], e)
            if not db.in_transaction:  # some failures end the transaction: the caller commits one
                db.execute("BEGIN")
        finally:
            db.execute("PRAGMA query_only = ON")
            db.execute(f"PRAGMA busy_timeout = {BUSY_SLICE_MS}")

    def _count_after(self, word: str, after: int) -> int:
        (count,) = self._db.execute(
            "SELECT count(*) FROM turn_words WHERE turn_words MATCH ? AND rowid > ?", (_phrase(word), after)
        ).fetchone()
        return int(count)

    def _best_impact(self, word: str, idf: float, after: int | None) -> float:
        """The most `word` adds to a turn (after rowid `after`, or in all), per unit of idf."""
        ranks = self._db.execute(
            "SELECT bm25(turn_words) FROM turn_words WHERE turn_words MATCH ? AND rowid > ?",
            (_phrase(word), -1 if after is None else after),
        ).fetchall()
        return -min((r[0] for r in ranks), default=0.0) / idf


def _phrase(word: str) -> str:
    return '"' + word.replace('"', '""') + '"'


def indexed_turns(db: sqlite3.Connection) -> tuple[int, int]:
    """The turns in the word index and their tokens, from FTS5's averages record: what bm25
    counts with, without counting rows."""
    row = db.execute("SELECT block FROM turn_words_data WHERE id = 1").fetchone()
    counts = _varints(bytes(row[0])) if row is not None and row[0] else [0]
    return counts[0], sum(counts[1:])


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
