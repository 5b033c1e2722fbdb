"""The embedded store's search index: vector search (across chats and inside one), turn windows,
word counts, search by words and re-embedding."""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ...errors import ChatNotFound, EmbedderMismatch, StoreError
from ...language.words import query_words
from ..checks import (
    check_one_dimension,
    ranked_matches,
    telling_words,
    text_ref,
    turn_match,
)
from ..protocol import (
    ChatMatch,
    EmbeddedWindow,
    StoredText,
    TextMatch,
    TextRef,
    TurnMatch,
    WordCounts,
)
from .connection import SQLiteConnection
from .rows import LEVEL_OF_KIND, parse_ts, vector_blob, vector_matrix
from .vectors import (
    ALL_WINDOWS,
    bump_generation,
    check_embedder,
    count_words,
    embedder_info_of,
    generation_of,
    set_embedder,
    texts_of,
    vector_count,
    vector_rows,
    vectors_changed,
)
from .word_bounds import WordBounds

if TYPE_CHECKING:
    import numpy as np

    from parla.records.embedding import EmbeddedText


class SQLiteSearch(SQLiteConnection):
    # -- embeddings and search -------------------------------------------------------------

    async def embedder_info(self) -> tuple[str, int] | None:
        return await self._read(embedder_info_of)

    async def search(self, query: EmbeddedText, match_count: int, texts_per_chat: int = 1) -> list[ChatMatch]:
        def read(db: sqlite3.Connection) -> list[ChatMatch]:
            with self._vector_file.ready(db) as index:
                info = embedder_info_of(db)
                if info is None or index is None:
                    return []
                _check_query(info, query)
                best = self._vector_file.best_per_chat(db, index, query.vector, match_count, texts_per_chat)
            marks = ",".join("?" * len(best))
            chats = {
                r["id"]: r
                for r in db.execute(
                    f"SELECT id, title, created_at, last_activity_at FROM chats WHERE id IN ({marks})",
                    [chat_id for chat_id, _ in best],
                ).fetchall()
            }
            bodies = texts_of(db, [ref for _, texts in best for ref, _ in texts])
            matches = [
                ChatMatch(
                    chat_id=chat_id,
                    title=chats[chat_id]["title"],
                    created_at=parse_ts(chats[chat_id]["created_at"]),
                    last_activity_at=parse_ts(chats[chat_id]["last_activity_at"]),
                    texts=tuple(TextMatch(ref, bodies[ref], similarity) for ref, similarity in texts),
                )
                for chat_id, texts in best
            ]
            return ranked_matches(matches)

        return await self._read(read)

    async def search_chat(self, query: EmbeddedText, chat_id: str, match_count: int) -> list[TextMatch]:
        def read(db: sqlite3.Connection) -> list[TextMatch]:
            info = embedder_info_of(db)
            if info is None or match_count <= 0:
                return []
            _check_query(info, query)
            # one chat's rows are few (hundreds for a long chat): read and compared directly
            rows = vector_rows(db, [chat_id])
            if not rows:
                return []
            sims = vector_matrix([blob for _, blob in rows]) @ query.vector.astype("<f4")
            order = (-sims).argsort(kind="stable")[:match_count]
            refs = [rows[int(i)][0] for i in order]
            bodies = texts_of(db, refs)
            return [TextMatch(ref, bodies[ref], float(sims[i])) for ref, i in zip(refs, order, strict=True)]

        return await self._read(read)

    # -- turn windows ----------------------------------------------------------------------

    async def window_frontier(self, chat_id: str, size: int) -> int:
        def read(db: sqlite3.Connection) -> int:
            if db.execute("SELECT 1 FROM chats WHERE id = ?", (chat_id,)).fetchone() is None:
                raise ChatNotFound(chat_id)
            row = db.execute(
                "SELECT max(start_seq) FROM turn_windows WHERE chat_id = ? AND end_seq - start_seq + 1 >= ?",
                (chat_id, size),
            ).fetchone()
            return int(row[0] or 0) + 1

        return await self._read(read)

    async def window_text(self, chat_id: str, start: int) -> str | None:
        row = await self._read(
            lambda db: db.execute(
                "SELECT text FROM turn_windows WHERE chat_id = ? AND start_seq = ?", (chat_id, start)
            ).fetchone()
        )
        return None if row is None else str(row[0])

    async def upsert_windows(self, chat_id: str, windows: Sequence[EmbeddedWindow]) -> None:
        if not windows:
            return

        def write(db: sqlite3.Connection) -> None:
            if db.execute("SELECT 1 FROM chats WHERE id = ?", (chat_id,)).fetchone() is None:
                raise ChatNotFound(chat_id)
            for window in windows:
                check_embedder(db, window.embedded)
                old = db.execute(
                    "SELECT words FROM turn_windows WHERE chat_id = ? AND start_seq = ?", (chat_id, window.range.start)
                ).fetchone()
                if old is not None:
                    count_words(db, old[0], -1)
                words = json.dumps(window.words)
                db.execute(
                    "INSERT INTO turn_windows (chat_id, start_seq, end_seq, text, words, embedding, embedder) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (chat_id, start_seq) DO UPDATE SET "
                    "end_seq = excluded.end_seq, text = excluded.text, words = excluded.words, "
                    "embedding = excluded.embedding, embedder = excluded.embedder",
                    (
                        chat_id,
                        window.range.start,
                        window.range.end,
                        window.embedded.text,
                        words,
                        vector_blob(window.embedded.vector),
                        window.embedded.embedder,
                    ),
                )
                count_words(db, words, 1)
            vectors_changed(db, chat_id)

        await self._write(write)

    async def word_counts(self, words: Sequence[str]) -> WordCounts:
        wanted = sorted({ALL_WINDOWS, *words})

        def read(db: sqlite3.Connection) -> WordCounts:
            marks = ",".join("?" * len(wanted))
            counts = dict(
                db.execute(f"SELECT word, windows FROM window_words WHERE word IN ({marks})", wanted).fetchall()
            )
            return WordCounts(windows=counts.pop(ALL_WINDOWS, 0), counts={w: counts[w] for w in words if counts.get(w)})

        return await self._read(read)

    async def search_words(self, words: Sequence[str], match_count: int, chat_id: str | None = None) -> list[TurnMatch]:
        # split as Postgres splits each word, so a quote or an asterisk in a word changes nothing
        words = query_words(" ".join(words))

        def read(db: sqlite3.Connection) -> list[TurnMatch]:
            if not words or match_count <= 0:
                return []
            bounds = WordBounds(db)
            found = bounds.counts(words)
            telling = telling_words(words, found, bounds.rows)
            if not telling:
                found_turns: list[TurnMatch] = []
            elif chat_id is None:
                found_turns = _best_across(db, telling, found, bounds.rows, match_count, bounds)
            else:
                rows = db.execute(
                    "SELECT w.chat_id, w.seq, w.body, -bm25(turn_words) AS score, t.role, c.title, c.last_activity_at "
                    "FROM turn_words w JOIN turns t ON t.chat_id = w.chat_id AND t.seq = w.seq "
                    "JOIN chats c ON c.id = w.chat_id "
                    "WHERE turn_words MATCH ? AND w.chat_id = ? ORDER BY bm25(turn_words), w.seq LIMIT ?",
                    (_fts_query(telling), chat_id, match_count),
                ).fetchall()
                found_turns = [turn_match(r) for r in rows]
            bounds.keep()
            return found_turns

        return await self._read_aside(read)

    async def embedded_texts(self) -> list[StoredText]:
        rows = await self._read(
            lambda db: db.execute(
                "SELECT id, 'summary_text', 0, 0, summary_text FROM chats WHERE summary_text != '' "
                "UNION ALL SELECT chat_id, CASE level WHEN 0 THEN 'chunk' ELSE 'meta' END, start_seq, end_seq, "
                "text FROM summaries "
                "UNION ALL SELECT chat_id, 'facts', start_seq, end_seq, text FROM facts WHERE text != '' "
                "UNION ALL SELECT chat_id, 'turns', start_seq, end_seq, text FROM turn_windows"
            ).fetchall()
        )
        return [StoredText(text_ref(r[0], r[1], r[2], r[3]), r[4]) for r in rows]

    async def replace_embeddings(self, items: Sequence[tuple[TextRef, np.ndarray]], embedder: str) -> None:
        """Write every vector anew in one transaction and record the new embedder, so a store is
        never left with vectors of two embedders."""
        dim = check_one_dimension(items)

        def write(db: sqlite3.Connection) -> None:
            stale = vector_count(db) - len(items)
            if stale > 0:
                raise StoreError(
                    f"{stale} embedded texts would be left with old vectors: embed every text from embedded_texts()"
                )
            for ref, vector in items:
                blob = vector_blob(vector)
                if ref.kind == "summary_text":
                    db.execute(
                        "UPDATE chats SET summary_embedding = ?, summary_embedder = ? WHERE id = ?",
                        (blob, embedder, ref.chat_id),
                    )
                elif ref.kind == "facts":
                    assert ref.range is not None
                    db.execute(
                        "UPDATE facts SET embedding = ?, embedder = ? WHERE chat_id = ? AND start_seq = ? AND end_seq = ?",
                        (blob, embedder, ref.chat_id, ref.range.start, ref.range.end),
                    )
                elif ref.kind == "turns":
                    assert ref.range is not None
                    db.execute(
                        "UPDATE turn_windows SET embedding = ?, embedder = ? WHERE chat_id = ? AND start_seq = ?",
                        (blob, embedder, ref.chat_id, ref.range.start),
                    )
                else:
                    assert ref.range is not None
                    db.execute(
                        "UPDATE summaries SET embedding = ?, embedder = ? WHERE chat_id = ? AND level = ? "
                        "AND start_seq = ? AND end_seq = ?",
                        (blob, embedder, ref.chat_id, int(LEVEL_OF_KIND[ref.kind]), ref.range.start, ref.range.end),
                    )
            if dim is not None:
                set_embedder(db, embedder, dim)
            bump_generation(db)
            db.execute("UPDATE meta SET value = ? WHERE key = 'rebuilt_generation'", (str(generation_of(db)),))

        await self._write(write)


def _check_query(info: tuple[str, int], query: EmbeddedText) -> None:
    """A query is compared only with vectors of its own embedder."""
    if info != (query.embedder, query.dim):
        raise EmbedderMismatch(
            f"the query was embedded by {query.embedder} ({query.dim} dims) but this store's vectors "
            f"by {info[0]} ({info[1]} dims): run `parla memory reembed` or set PARLA_EMBEDDER back"
        )


def _fts_query(words: Sequence[str]) -> str:
    # each word quoted: FTS5 query syntax (AND, NEAR, *, ^) never comes from the user
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in words)


# A word adds idf * tf (k1 + 1) / (tf + k1 (1 - b + b len / avglen)) to a turn's bm25 in FTS5
# (k1 1.2, b 0.75: https://sqlite.org/fts5.html#the_bm25_function, the code in
# https://sqlite.org/src/file?name=ext/fts5/fts5_aux.c), always less than idf (k1 + 1). The
# margin covers rounding and a row count FTS5 takes from its own index.
_MOST_PER_IDF = 2.2 * 1.001


# Below this many turns holding a word per turn wanted, every such turn is scored in one query
# (a store of a few hundred chats, most questions): each step of the pruning is two queries, and
# FTS5 walks each word's list once a query to find its idf.
_SCORE_ALL_PER_WANTED = 20


def _most_added(doc_count: int, total: int) -> float:
    """More than a word found in `doc_count` of `total` turns can add to a turn's bm25."""
    return _MOST_PER_IDF * math.log((total - doc_count + 0.5) / (doc_count + 0.5))


def _best_across(
    db: sqlite3.Connection,
    telling: list[str],
    doc_counts: dict[str, int],
    total: int,
    match_count: int,
    bounds: WordBounds,
) -> list[TurnMatch]:
    """The `match_count` best turns of every chat by bm25 over `telling`, ties at the cut by chat
    and turn, scoring as few turns as that needs (MaxScore's pruning).

    Across thousands of chats a common word is in tens of thousands of turns, and FTS5's bm25
    costs about a microsecond a turn. So the turns holding the rarest word are scored first, with
    bm25 over every word; then those holding the next rarest and none before it, and so on. A
    turn holding none of the words scored so far scores at most the sum of what each other word
    can add: once that is below the `match_count`-th best score found, no such turn can be among
    the best, and the rest are never scored. What a word can add is bounded by 2.2 idf first
    (free), then, when that is not enough to stop, by the most it adds to any turn (`bounds`).
    When few turns hold the words, they are all scored in one query instead."""
    if sum(doc_counts[w] for w in telling) <= _SCORE_ALL_PER_WANTED * match_count:
        ranks = dict(db.execute(_SCORED, (_fts_query(telling),)).fetchall())  # few: all at once
    else:
        ranks = _pruned(db, telling, doc_counts, total, match_count, bounds)
    if len(ranks) > match_count:
        cut = sorted(ranks.values())[match_count - 1]
        ranks = {rowid: rank for rowid, rank in ranks.items() if rank <= cut}
    rows = db.execute(
        "SELECT w.rowid, w.chat_id, w.seq, w.body, t.role, c.title, c.last_activity_at "
        "FROM turn_words w JOIN turns t ON t.chat_id = w.chat_id AND t.seq = w.seq "
        "JOIN chats c ON c.id = w.chat_id WHERE w.rowid IN (SELECT value FROM json_each(?))",
        (json.dumps(list(ranks)),),
    ).fetchall()
    rows.sort(key=lambda r: (ranks[r["rowid"]], r["chat_id"], r["seq"]))
    return [turn_match({**dict(r), "score": -ranks[r["rowid"]]}) for r in rows[:match_count]]


def _pruned(
    db: sqlite3.Connection,
    telling: list[str],
    doc_counts: dict[str, int],
    total: int,
    match_count: int,
    bounds: WordBounds,
) -> dict[int, float]:
    """bm25 (FTS5's rank: lower is better) by rowid of every turn that may be among the
    `match_count` best, the words' turns scored rarest word first."""
    rarest_first = sorted(telling, key=lambda w: doc_counts[w])
    ranks: dict[int, float] = {}
    for i, word in enumerate(rarest_first):
        taken, rest = rarest_first[:i], rarest_first[i + 1 :]
        ranks.update(_scored_turns(db, word, taken, rest))
        if len(ranks) >= match_count and rest:
            floor = -sorted(ranks.values())[match_count - 1]
            if sum(_most_added(doc_counts[w], total) for w in rest) < floor:
                break
            if _bounded_below(bounds, rest, doc_counts, total, floor):
                break
    return ranks


def _bounded_below(bounds: WordBounds, rest: list[str], doc_counts: dict[str, int], total: int, floor: float) -> bool:
    """Whether the words of `rest` (rarest first) together add less than `floor` to any turn,
    by the most each adds to a turn: those kept first, then the others while finding theirs
    (every turn of the word scored) costs less than scoring the next word's turns would."""
    most = {w: _most_added(doc_counts[w], total) for w in rest}
    budget = 2 * doc_counts[rest[0]]
    for word in sorted(rest, key=lambda w: (not bounds.kept(w), -most[w])):
        if not bounds.kept(word):
            budget -= doc_counts[word]
            if budget < 0:
                return False
        most[word] = bounds.most_added(word, doc_counts[word])
        if sum(most.values()) < floor:
            return True
    return False


def _scored_turns(db: sqlite3.Connection, word: str, taken: list[str], rest: list[str]) -> dict[int, float]:
    """The turns holding `word` and none of `taken`, each with its bm25 over every word. FTS5
    scores the phrases of the query it runs, and a word a turn lacks adds nothing: those holding
    one of `rest` too are scored by a query that names every word, those holding none by one
    that names every word but finds only them. Both are walked along `word`'s list: FTS5 seeks
    in the longer lists of an AND or a NOT rather than reading them through."""
    holding = _fts_query([word]) if not taken else f"{_fts_query([word])} NOT ({_fts_query(taken)})"
    if not rest:
        return dict(db.execute(_SCORED, (holding,)).fetchall())
    others = _fts_query(rest)
    ranks = dict(db.execute(_SCORED, (f"({holding}) AND ({others})",)).fetchall())
    ranks.update(db.execute(_SCORED, (f"({holding}) NOT ({others})",)).fetchall())
    return ranks


_SCORED = "SELECT rowid, bm25(turn_words) FROM turn_words WHERE turn_words MATCH ?"
