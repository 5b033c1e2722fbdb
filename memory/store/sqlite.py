"""The embedded store: one SQLite file (WAL), the same semantics as the Supabase store.

Turns live in their own table rather than in a JSON column so an append costs the same at turn
10 and at turn 5,000; full_history and assistant_history are read from it. Vector search runs in
numpy over an in-memory matrix of every embedded text, reloaded when the embedding generation
(bumped by every transaction that writes a vector, in any process) changes.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, Self, TypeVar

import numpy as np

from parla.memory.chat import Chat, ChatHistory, storable_title
from parla.memory.embedding import EmbeddedText
from parla.memory.errors import ChatNotFound, EmbedderMismatch, StoreError, TurnConflict
from parla.memory.facts import FactBlock, format_fact_lines, stored_fact_lines
from parla.memory.importance import IMPORTANT, turn_importance, with_importance
from parla.memory.pins import Pin
from parla.memory.stats import MemoryStats
from parla.memory.store import (
    AppendResult,
    ChatMatch,
    CompactionCommit,
    EmbeddedWindow,
    MemorySnapshot,
    PendingWrites,
    StoredText,
    TextMatch,
    TextRef,
    TurnMatch,
    WordCounts,
    facts_text,
)
from parla.memory.store.checks import (
    check_one_dimension,
    check_unique_turn_ids,
    exact_id_first,
    pin_not_found,
    ranked_matches,
    telling_words,
    text_ref,
    turn_match,
)
from parla.memory.store.sqlite_file import create_private, store_error, tighten
from parla.memory.store.sqlite_index import VectorIndex
from parla.memory.store.sqlite_schema import MIGRATIONS
from parla.memory.summary import Summary, SummaryLevel
from parla.memory.turn import MessageRange, Part, TokenUsage, Turn, new_id, utcnow
from parla.memory.words import query_words

T = TypeVar("T")

_KIND_OF_LEVEL = {SummaryLevel.CHUNK: "chunk", SummaryLevel.META: "meta"}
_LEVEL_OF_KIND = {v: k for k, v in _KIND_OF_LEVEL.items()}


def _ts(value: datetime) -> str:
    return value.astimezone(UTC).isoformat(timespec="microseconds")


def _dt(value: str) -> datetime:
    return datetime.fromisoformat(value)


def _blob(vector: np.ndarray) -> bytes:
    return np.asarray(vector, dtype=np.float32).tobytes()


# A generated title (two parameters, both the new title or NULL) replaces no title or an earlier
# generated one, never a title the user gave; the right-hand sides see the row before the update.
_GENERATED_TITLE = (
    "title = CASE WHEN title IS NULL OR title_generated THEN coalesce(?, title) ELSE title END, "
    "title_generated = CASE WHEN title IS NULL THEN ? IS NOT NULL ELSE title_generated END"
)


def _chat(row: sqlite3.Row) -> Chat:
    return Chat(
        id=row["id"],
        title=row["title"],
        title_generated=bool(row["title_generated"]),
        created_at=_dt(row["created_at"]),
        last_activity_at=_dt(row["last_activity_at"]),
        summary_text=row["summary_text"],
        rolling_summary=row["rolling_summary"],
        summarized_through=row["summarized_through"],
        compaction_version=row["compaction_version"],
        turn_count=row["turn_count"],
    )


def _turn(row: sqlite3.Row) -> Turn:
    return Turn(
        id=row["id"],
        role=row["role"],
        parts=[Part(**p) for p in json.loads(row["parts"])],
        thinking=row["thinking"],
        seq=row["seq"],
        created_at=_dt(row["created_at"]),
        interrupted=bool(row["interrupted"]),
        source=row["source"],
        model_variant=row["model_variant"],
        importance=row["importance"],
        usage=TokenUsage.model_validate_json(row["usage"]) if row["usage"] else None,
    )


def _stored_turn_importance(role: str, parts: str) -> float:
    """The rules' importance of a turn as the file holds it (for the migration that adds the column)."""
    return turn_importance(Turn.model_validate({"role": role, "parts": json.loads(parts)}))


class SQLiteChatStore:
    """`ChatStore` on one SQLite file. Use as `async with SQLiteChatStore(path) as store:`.

    One thread owns the connection, and every operation is one function run there from BEGIN to
    COMMIT or ROLLBACK, awaited once. Cancelling the awaiting task (a tool timeout, a reconnect, a
    TaskGroup exiting) therefore never leaves a transaction open or the file's write lock held: the
    function finishes on its own, and rolls back instead if it was abandoned before it began its
    work (for instance while waiting for another process's write lock)."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._thread: ThreadPoolExecutor | None = None
        self._db: sqlite3.Connection | None = None
        self._index: VectorIndex | None = None  # touched only in the connection's thread

    # -- lifecycle -------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def open(self) -> None:
        thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="parla-sqlite")
        opening = thread.submit(self._connect)
        try:
            self._db = await asyncio.shield(asyncio.wrap_future(opening))
        except BaseException:
            # failed or cancelled: close what the thread opens (it runs on), then end the thread
            thread.submit(_close_opened, opening)
            thread.shutdown(wait=False)
            raise
        self._thread = thread

    async def close(self) -> None:
        thread, db = self._thread, self._db
        if thread is None or db is None:
            return
        self._thread = self._db = None
        closing = thread.submit(db.close)  # after every operation already queued
        thread.shutdown(wait=False)
        await asyncio.shield(asyncio.wrap_future(closing))

    def _connect(self) -> sqlite3.Connection:
        create_private(self.path)
        try:
            db = sqlite3.connect(self.path, isolation_level=None)
        except sqlite3.Error as e:
            raise store_error(self.path, e, "open") from e
        try:
            db.row_factory = sqlite3.Row
            for pragma in ("journal_mode=WAL", "foreign_keys=ON", "busy_timeout=10000", "synchronous=NORMAL"):
                db.execute(f"PRAGMA {pragma}")
            db.create_function("parla_turn_importance", 2, _stored_turn_importance, deterministic=True)
            _transaction(db, "BEGIN IMMEDIATE", self._migrate, threading.Event())
            tighten(self.path)
        except BaseException as e:
            db.close()
            if isinstance(e, sqlite3.Error):
                raise store_error(self.path, e, "open") from e
            raise
        return db

    def _migrate(self, db: sqlite3.Connection) -> None:
        version = db.execute("PRAGMA user_version").fetchone()[0]
        if version > len(MIGRATIONS):
            raise StoreError(
                f"{self.path} has schema version {version}, newer than this Parla knows "
                f"({len(MIGRATIONS)}): upgrade Parla"
            )
        for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
            for statement in script.split(";\n"):
                if statement.strip():
                    db.execute(statement)
            db.execute(f"PRAGMA user_version = {number}")

    async def _run(self, begin: str, work: Callable[[sqlite3.Connection], T], doing: str) -> T:
        if self._thread is None or self._db is None:
            raise StoreError("the store is not open")
        abandoned = threading.Event()
        job = asyncio.get_running_loop().run_in_executor(self._thread, _transaction, self._db, begin, work, abandoned)
        try:
            return await job
        except asyncio.CancelledError:
            abandoned.set()
            raise
        except sqlite3.Error as e:
            raise store_error(self.path, e, doing) from e

    async def _write(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """One write transaction; BEGIN IMMEDIATE takes the file's write lock up front so a
        concurrent writer in another process waits (busy_timeout) instead of failing late."""
        return await self._run("BEGIN IMMEDIATE", work, "write to")

    async def _read(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """A consistent snapshot for reads of several statements."""
        return await self._run("BEGIN", work, "read")

    # -- chats -----------------------------------------------------------------------------

    async def create_chat(
        self,
        *,
        chat_id: str | None = None,
        title: str | None = None,
        created_at: datetime | None = None,
        turns: Sequence[Turn] = (),
    ) -> AppendResult:
        chat_id = chat_id or new_id()
        created = created_at or (turns[0].created_at if turns else utcnow())
        title = storable_title(title, chat_id)

        def create(db: sqlite3.Connection) -> AppendResult:
            db.execute(
                "INSERT INTO chats (id, title, created_at, last_activity_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (id) DO NOTHING",
                (chat_id, title, _ts(created), _ts(created)),
            )
            stored, added = _append(db, chat_id, turns)
            return AppendResult(_get_chat(db, chat_id), stored, added)

        return await self._write(create)

    async def get_chat(self, chat_id: str) -> Chat:
        return await self._read(lambda db: _get_chat(db, chat_id))

    async def load_memory(
        self, chat_id: str, *, min_importance: float = IMPORTANT, important_limit: int = 30
    ) -> MemorySnapshot:
        def load(db: sqlite3.Connection) -> MemorySnapshot:
            chat = _get_chat(db, chat_id)
            important = db.execute(
                "SELECT * FROM turns WHERE chat_id = ? AND seq <= ? AND importance >= ? "
                "ORDER BY importance DESC, seq DESC LIMIT ?",
                (chat_id, chat.summarized_through, min_importance, important_limit),
            ).fetchall()
            return MemorySnapshot(
                chat=chat,
                tail=_turns(db, chat_id, chat.summarized_through + 1, None),
                pins=_pins(db, chat_id, forgotten=False),
                metas=_summaries(db, chat_id, SummaryLevel.META),
                facts=_facts(db, chat_id),
                important=[_turn(r) for r in important],
            )

        return await self._read(load)

    async def find_chats(self, ref: str) -> list[Chat]:
        """Chats whose id is `ref`, starts with `ref`, or whose title is `ref` (any case)."""
        ref = ref.strip()
        if not ref:
            return []
        rows = await self._read(
            lambda db: db.execute(
                "SELECT * FROM chats WHERE id = ? OR (length(?) >= 4 AND id LIKE ? || '%') "
                "OR lower(title) = lower(?) ORDER BY last_activity_at DESC",
                (ref, ref, ref.replace("%", "").replace("_", ""), ref),
            ).fetchall()
        )
        return [_chat(r) for r in exact_id_first(rows, ref, lambda r: r["id"])]

    async def list_chats(self, limit: int = 50, offset: int = 0) -> list[Chat]:
        rows = await self._read(
            lambda db: db.execute(
                "SELECT * FROM chats ORDER BY last_activity_at DESC, id LIMIT ? OFFSET ?", (limit, offset)
            ).fetchall()
        )
        return [_chat(r) for r in rows]

    async def rename_chat(self, chat_id: str, title: str) -> Chat:
        title = title.strip()
        if not title:
            raise StoreError("a chat title cannot be empty")
        stored = storable_title(title, chat_id)

        def rename(db: sqlite3.Connection) -> Chat:
            cur = db.execute("UPDATE chats SET title = ?, title_generated = 0 WHERE id = ?", (stored, chat_id))
            if cur.rowcount == 0:
                raise ChatNotFound(chat_id)
            return _get_chat(db, chat_id)

        return await self._write(rename)

    async def delete_chat(self, chat_id: str) -> None:
        def delete(db: sqlite3.Connection) -> None:
            for (words,) in db.execute("SELECT words FROM turn_windows WHERE chat_id = ?", (chat_id,)).fetchall():
                _count_words(db, words, -1)
            if db.execute("DELETE FROM chats WHERE id = ?", (chat_id,)).rowcount == 0:
                raise ChatNotFound(chat_id)
            _vectors_changed(db, chat_id)

        await self._write(delete)

    # -- turns -----------------------------------------------------------------------------

    async def append_turns(self, chat_id: str, turns: Sequence[Turn]) -> AppendResult:
        def append(db: sqlite3.Connection) -> AppendResult:
            _get_chat(db, chat_id)
            stored, added = _append(db, chat_id, turns)
            return AppendResult(_get_chat(db, chat_id), stored, added)

        return await self._write(append)

    async def load_history(self, chat_id: str) -> ChatHistory:
        def load(db: sqlite3.Connection) -> ChatHistory:
            return ChatHistory(chat=_get_chat(db, chat_id), full_history=_turns(db, chat_id, 1, None))

        return await self._read(load)

    async def load_turns(self, chat_id: str, start: int = 1, end: int | None = None) -> list[Turn]:
        def load(db: sqlite3.Connection) -> list[Turn]:
            _get_chat(db, chat_id)
            return _turns(db, chat_id, start, end)

        return await self._read(load)

    # -- compaction ------------------------------------------------------------------------

    async def commit_compaction(self, commit: CompactionCommit) -> Chat | None:
        title = storable_title(commit.title, commit.chat_id)

        def write(db: sqlite3.Connection) -> Chat | None:
            _check_embedder(db, commit.summary_text)
            cur = db.execute(
                "UPDATE chats SET rolling_summary = ?, summarized_through = ?, summary_text = ?, "
                f"summary_embedding = ?, summary_embedder = ?, {_GENERATED_TITLE}, "
                "compaction_version = compaction_version + 1 "
                "WHERE id = ? AND compaction_version = ? AND turn_count >= ?",
                (
                    commit.rolling_summary,
                    commit.summarized_through,
                    commit.summary_text.text,
                    _blob(commit.summary_text.vector),
                    commit.summary_text.embedder,
                    title,
                    title,
                    commit.chat_id,
                    commit.expected_version,
                    commit.summarized_through,
                ),
            )
            if cur.rowcount == 0:
                _get_chat(db, commit.chat_id)
                return None
            _vectors_changed(db, commit.chat_id)
            return _get_chat(db, commit.chat_id)

        return await self._write(write)

    async def set_summary_text(
        self, chat_id: str, summary_text: EmbeddedText, expected_version: int, title: str | None = None
    ) -> bool:
        title = storable_title(title, chat_id)

        def write(db: sqlite3.Connection) -> bool:
            _check_embedder(db, summary_text)
            cur = db.execute(
                "UPDATE chats SET summary_text = ?, summary_embedding = ?, summary_embedder = ?, "
                f"{_GENERATED_TITLE} WHERE id = ? AND compaction_version = ?",
                (
                    summary_text.text,
                    _blob(summary_text.vector),
                    summary_text.embedder,
                    title,
                    title,
                    chat_id,
                    expected_version,
                ),
            )
            if cur.rowcount:
                _vectors_changed(db, chat_id)
            return bool(cur.rowcount)

        return await self._write(write)

    # -- summaries and facts ---------------------------------------------------------------

    async def upsert_summary(
        self,
        chat_id: str,
        level: SummaryLevel,
        rng: MessageRange,
        embedded: EmbeddedText,
        importance: float | None = None,
    ) -> Summary:
        now = utcnow()

        def write(db: sqlite3.Connection) -> None:
            _get_chat(db, chat_id)
            _check_embedder(db, embedded)
            db.execute(
                "INSERT INTO summaries (chat_id, level, start_seq, end_seq, text, embedding, embedder, updated_at, "
                "importance) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (chat_id, level, start_seq, end_seq) "
                "DO UPDATE SET text = excluded.text, embedding = excluded.embedding, embedder = excluded.embedder, "
                "updated_at = excluded.updated_at, importance = excluded.importance",
                (
                    chat_id,
                    int(level),
                    rng.start,
                    rng.end,
                    embedded.text,
                    _blob(embedded.vector),
                    embedded.embedder,
                    _ts(now),
                    importance,
                ),
            )
            _vectors_changed(db, chat_id)

        await self._write(write)
        return Summary(
            chat_id=chat_id, level=level, range=rng, text=embedded.text, updated_at=now, importance=importance
        )

    async def list_summaries(self, chat_id: str, level: SummaryLevel | None = None) -> list[Summary]:
        return await self._read(lambda db: _summaries(db, chat_id, level))

    async def upsert_facts(
        self, chat_id: str, rng: MessageRange, lines: list[str], embedded: EmbeddedText | None
    ) -> FactBlock:
        text = facts_text(lines, embedded)
        now = utcnow()

        def write(db: sqlite3.Connection) -> None:
            _get_chat(db, chat_id)
            if embedded is not None:
                _check_embedder(db, embedded)
            db.execute(
                "INSERT INTO facts (chat_id, start_seq, end_seq, text, embedding, embedder, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (chat_id, start_seq, end_seq) DO UPDATE SET "
                "text = excluded.text, embedding = excluded.embedding, embedder = excluded.embedder, "
                "updated_at = excluded.updated_at",
                (
                    chat_id,
                    rng.start,
                    rng.end,
                    text,
                    _blob(embedded.vector) if embedded else None,
                    embedded.embedder if embedded else None,
                    _ts(now),
                ),
            )
            _vectors_changed(db, chat_id)

        await self._write(write)
        return FactBlock(chat_id=chat_id, range=rng, lines=lines, updated_at=now)

    async def list_facts(self, chat_id: str) -> list[FactBlock]:
        return await self._read(lambda db: _facts(db, chat_id))

    async def set_fact_lines(
        self, chat_id: str, rng: MessageRange, lines: list[str], forgotten: list[str], embedded: EmbeddedText | None
    ) -> FactBlock:
        text = facts_text(lines, embedded)

        def write(db: sqlite3.Connection) -> FactBlock:
            if embedded is not None:
                _check_embedder(db, embedded)
            row = db.execute(
                "UPDATE facts SET text = ?, forgotten = ?, embedding = ?, embedder = ?, updated_at = ? "
                "WHERE chat_id = ? AND start_seq = ? AND end_seq = ? "
                "RETURNING chat_id, start_seq, end_seq, text, forgotten, updated_at",
                (
                    text,
                    format_fact_lines(forgotten),
                    _blob(embedded.vector) if embedded else None,
                    embedded.embedder if embedded else None,
                    _ts(utcnow()),
                    chat_id,
                    rng.start,
                    rng.end,
                ),
            ).fetchone()
            if row is None:
                raise StoreError(f"no facts for messages {rng} of chat {chat_id}")
            _vectors_changed(db, chat_id)
            return _fact_block(row)

        return await self._write(write)

    # -- pins ------------------------------------------------------------------------------

    async def add_pin(self, pin: Pin) -> Pin:
        def write(db: sqlite3.Connection) -> Pin:
            _get_chat(db, pin.chat_id)
            row = db.execute(
                f"{_INSERT_PIN} ON CONFLICT (id) DO UPDATE SET content = excluded.content, "
                "importance = excluded.importance, pin_type = excluded.pin_type, "
                "source_turn_id = coalesce(excluded.source_turn_id, source_turn_id), "
                "source_seq = coalesce(excluded.source_seq, source_seq) RETURNING *",
                _pin_row(pin),
            ).fetchone()
            return _pin(row)

        return await self._write(write)

    async def add_new_pins(self, pins: Sequence[Pin]) -> list[Pin]:
        def write(db: sqlite3.Connection) -> list[Pin]:
            added = []
            for pin in pins:
                _get_chat(db, pin.chat_id)
                row = db.execute(f"{_INSERT_PIN} ON CONFLICT (id) DO NOTHING RETURNING *", _pin_row(pin)).fetchone()
                if row is not None:
                    added.append(_pin(row))
            return added

        return await self._write(write)

    async def list_pins(self, chat_id: str, *, forgotten: bool = False) -> list[Pin]:
        return await self._read(lambda db: _pins(db, chat_id, forgotten=forgotten))

    async def set_pin_forgotten(self, pin_id: str, forgotten: bool) -> Pin:
        def write(db: sqlite3.Connection) -> Pin:
            row = db.execute(
                "UPDATE pins SET forgotten_at = ? WHERE id = ? RETURNING *",
                (_ts(utcnow()) if forgotten else None, pin_id),
            ).fetchone()
            if row is None:
                raise pin_not_found(pin_id)
            return _pin(row)

        return await self._write(write)

    async def delete_pin(self, pin_id: str) -> None:
        def write(db: sqlite3.Connection) -> None:
            if db.execute("DELETE FROM pins WHERE id = ?", (pin_id,)).rowcount == 0:
                raise pin_not_found(pin_id)

        await self._write(write)

    # -- embeddings and search -------------------------------------------------------------

    async def embedder_info(self) -> tuple[str, int] | None:
        return await self._read(_embedder_info)

    async def search(self, query: EmbeddedText, match_count: int, texts_per_chat: int = 1) -> list[ChatMatch]:
        def read(db: sqlite3.Connection) -> list[ChatMatch]:
            info = _embedder_info(db)
            if info is None:
                return []
            if info != (query.embedder, query.dim):
                raise EmbedderMismatch(
                    f"the query was embedded by {query.embedder} ({query.dim} dims) but this store's vectors by "
                    f"{info[0]} ({info[1]} dims): run `parla memory reembed` or set PARLA_EMBEDDER back"
                )
            index = self._current_index(db, info[1])
            best = index.best_per_chat(query.vector, match_count, texts_per_chat)
            marks = ",".join("?" * len(best))
            chats = {
                r["id"]: r
                for r in db.execute(
                    f"SELECT id, title, created_at, last_activity_at FROM chats WHERE id IN ({marks})",
                    [chat_id for chat_id, _ in best],
                ).fetchall()
            }
            bodies = _texts_of(db, [ref for _, texts in best for ref, _ in texts])
            matches = [
                ChatMatch(
                    chat_id=chat_id,
                    title=chats[chat_id]["title"],
                    created_at=_dt(chats[chat_id]["created_at"]),
                    last_activity_at=_dt(chats[chat_id]["last_activity_at"]),
                    texts=tuple(TextMatch(ref, bodies[ref], similarity) for ref, similarity in texts),
                )
                for chat_id, texts in best
            ]
            return ranked_matches(matches)

        return await self._read(read)

    def _current_index(self, db: sqlite3.Connection, dim: int) -> VectorIndex:
        """The open index brought up to date: only the chats whose vectors changed are reloaded;
        everything after a re-embedding."""
        generation = _generation(db)
        rebuilt = int(db.execute("SELECT value FROM meta WHERE key = 'rebuilt_generation'").fetchone()[0])
        index = self._index
        if index is None or index.dim != dim or index.generation < rebuilt:
            index = VectorIndex.build(generation, _vector_rows(db), dim)
        elif index.generation != generation:
            changed = [
                r[0]
                for r in db.execute(
                    "SELECT chat_id FROM vector_changes WHERE generation > ?", (index.generation,)
                ).fetchall()
            ]
            index.replace_chats(changed, _vector_rows(db, changed), generation)
        self._index = index
        return index

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

    async def upsert_windows(self, chat_id: str, windows: Sequence[EmbeddedWindow]) -> None:
        if not windows:
            return

        def write(db: sqlite3.Connection) -> None:
            if db.execute("SELECT 1 FROM chats WHERE id = ?", (chat_id,)).fetchone() is None:
                raise ChatNotFound(chat_id)
            for window in windows:
                _check_embedder(db, window.embedded)
                old = db.execute(
                    "SELECT words FROM turn_windows WHERE chat_id = ? AND start_seq = ?", (chat_id, window.range.start)
                ).fetchone()
                if old is not None:
                    _count_words(db, old[0], -1)
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
                        _blob(window.embedded.vector),
                        window.embedded.embedder,
                    ),
                )
                _count_words(db, words, 1)
            _vectors_changed(db, chat_id)

        await self._write(write)

    async def word_counts(self, words: Sequence[str]) -> WordCounts:
        wanted = sorted({_ALL_WINDOWS, *words})

        def read(db: sqlite3.Connection) -> WordCounts:
            marks = ",".join("?" * len(wanted))
            counts = dict(
                db.execute(f"SELECT word, windows FROM window_words WHERE word IN ({marks})", wanted).fetchall()
            )
            return WordCounts(
                windows=counts.pop(_ALL_WINDOWS, 0), counts={w: counts[w] for w in words if counts.get(w)}
            )

        return await self._read(read)

    async def search_words(self, words: Sequence[str], match_count: int, chat_id: str | None = None) -> list[TurnMatch]:
        # split as Postgres splits each word, so a quote or an asterisk in a word changes nothing
        words = query_words(" ".join(words))

        def read(db: sqlite3.Connection) -> list[TurnMatch]:
            if not words or match_count <= 0:
                return []
            marks = ",".join("?" * len(words))
            found = dict(
                db.execute(f"SELECT term, doc FROM turn_vocab WHERE term IN ({marks})", list(words)).fetchall()
            )
            total = db.execute("SELECT count(*) FROM turns").fetchone()[0]
            telling = telling_words(words, found, total)
            if not telling:
                return []
            # each word quoted: FTS5 query syntax (AND, NEAR, *, ^) never comes from the user
            query = " OR ".join('"' + w.replace('"', '""') + '"' for w in telling)
            rows = db.execute(
                "SELECT w.chat_id, w.seq, w.body, -bm25(turn_words) AS score, t.role, c.title, c.last_activity_at "
                "FROM turn_words w JOIN turns t ON t.chat_id = w.chat_id AND t.seq = w.seq "
                "JOIN chats c ON c.id = w.chat_id "
                "WHERE turn_words MATCH ? AND (? IS NULL OR w.chat_id = ?) "
                "ORDER BY bm25(turn_words), w.chat_id, w.seq LIMIT ?",
                (query, chat_id, chat_id, match_count),
            ).fetchall()
            return [turn_match(r) for r in rows]

        return await self._read(read)

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
            stale = _vector_count(db) - len(items)
            if stale > 0:
                raise StoreError(
                    f"{stale} embedded texts would be left with old vectors: embed every text from embedded_texts()"
                )
            for ref, vector in items:
                blob = _blob(vector)
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
                        (blob, embedder, ref.chat_id, int(_LEVEL_OF_KIND[ref.kind]), ref.range.start, ref.range.end),
                    )
            if dim is not None:
                _set_embedder(db, embedder, dim)
            _bump_generation(db)
            db.execute("UPDATE meta SET value = ? WHERE key = 'rebuilt_generation'", (str(_generation(db)),))

        await self._write(write)

    # -- stats -----------------------------------------------------------------------------

    async def flush(self) -> int:
        return 0  # every write is on disk when its call returns

    async def pending_writes(self) -> PendingWrites:
        return PendingWrites()

    async def schema_version(self) -> None:
        return None  # the store creates and migrates its own file

    async def stats(self, chat_id: str | None = None) -> MemoryStats:
        def read(db: sqlite3.Connection) -> MemoryStats:
            if chat_id is not None:
                _get_chat(db, chat_id)
            # every count of one chat, or of all when the parameter is NULL
            mine = "(:chat IS NULL OR chat_id = :chat)"
            one = db.execute(
                "SELECT (SELECT count(*) FROM chats WHERE :chat IS NULL OR id = :chat), "
                f"(SELECT count(*) FROM turns WHERE {mine}), (SELECT count(*) FROM summaries WHERE {mine}), "
                f"(SELECT count(*) FROM facts WHERE text != '' AND {mine}), "
                f"(SELECT count(*) FROM pins WHERE forgotten_at IS NULL AND {mine}), "
                f"(SELECT min(created_at) FROM turns WHERE {mine}), (SELECT max(created_at) FROM turns WHERE {mine}), "
                f"(SELECT avg(importance) FROM pins WHERE forgotten_at IS NULL AND {mine}), "
                f"(SELECT count(*) FROM pins WHERE forgotten_at IS NULL AND pin_type = 'auto' AND {mine}), "
                f"(SELECT avg(importance) FROM turns WHERE {mine}), "
                f"(SELECT count(*) FROM turns WHERE importance >= :important AND {mine}), "
                "(SELECT count(*) FROM chats WHERE summary_embedding IS NOT NULL AND (:chat IS NULL OR id = :chat)) "
                f"+ (SELECT count(*) FROM summaries WHERE {mine}) "
                f"+ (SELECT count(*) FROM facts WHERE embedding IS NOT NULL AND {mine}) "
                f"+ (SELECT count(*) FROM turn_windows WHERE {mine})",
                {"chat": chat_id, "important": IMPORTANT},
            ).fetchone()
            info = _embedder_info(db)
            return MemoryStats(
                total_chats=one[0],
                total_messages=one[1],
                total_summaries=one[2],
                total_facts=one[3],
                total_pins=one[4],
                oldest_message=_dt(one[5]) if one[5] else None,
                newest_message=_dt(one[6]) if one[6] else None,
                average_importance=round(one[7], 2) if one[7] is not None else None,
                embedder=info[0] if info else None,
                embedding_dim=info[1] if info else None,
                embedded_texts=one[11],
                auto_pins=one[8],
                average_turn_importance=round(one[9], 2) if one[9] is not None else None,
                important_turns=one[10],
            )

        return await self._read(read)


# -- run in the connection's thread ------------------------------------------------------------


def _transaction(
    db: sqlite3.Connection, begin: str, work: Callable[[sqlite3.Connection], T], abandoned: threading.Event
) -> T:
    """BEGIN, the work, COMMIT; ROLLBACK on any failure, and when the caller gave up while BEGIN
    waited (nothing it asked for is then done). The connection is outside a transaction after."""
    db.execute(begin)
    try:
        if abandoned.is_set():
            raise asyncio.CancelledError
        result = work(db)
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
    return result


def _close_opened(opening: Future[sqlite3.Connection]) -> None:
    if opening.exception() is None:
        opening.result().close()


def _get_chat(db: sqlite3.Connection, chat_id: str) -> Chat:
    row = db.execute("SELECT * FROM chats WHERE id = ?", (chat_id,)).fetchone()
    if row is None:
        raise ChatNotFound(chat_id)
    return _chat(row)


def _append(db: sqlite3.Connection, chat_id: str, turns: Sequence[Turn]) -> tuple[list[Turn], int]:
    if not turns:
        return [], 0
    turns = with_importance(turns)
    check_unique_turn_ids(turns)
    ids = [t.id for t in turns]
    marks = ",".join("?" * len(ids))
    existing = {
        r["id"]: r for r in db.execute(f"SELECT id, chat_id, seq FROM turns WHERE id IN ({marks})", ids).fetchall()
    }
    seq = db.execute("SELECT turn_count FROM chats WHERE id = ?", (chat_id,)).fetchone()["turn_count"]
    stored: list[Turn] = []
    fresh: list[tuple[Any, ...]] = []
    latest: datetime | None = None
    for turn in turns:
        known = existing.get(turn.id)
        if known is not None:
            if known["chat_id"] != chat_id:
                raise TurnConflict(f"turn {turn.id} is already stored in chat {known['chat_id']}")
            stored.append(turn.model_copy(update={"seq": known["seq"]}))
            continue
        seq += 1
        stored.append(turn.model_copy(update={"seq": seq}))
        latest = turn.created_at if latest is None or turn.created_at > latest else latest
        fresh.append(
            (
                turn.id,
                chat_id,
                seq,
                turn.role,
                json.dumps([p.model_dump() for p in turn.parts], ensure_ascii=False),
                turn.thinking,
                _ts(turn.created_at),
                int(turn.interrupted),
                turn.source,
                turn.model_variant,
                turn.importance,
                turn.usage.model_dump_json(exclude_none=True) if turn.usage else None,
            )
        )
    if fresh:
        db.executemany(
            "INSERT INTO turns (id, chat_id, seq, role, parts, thinking, created_at, interrupted, source, "
            "model_variant, importance, usage) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            fresh,
        )
        db.execute(
            "UPDATE chats SET turn_count = ?, last_activity_at = max(last_activity_at, ?) WHERE id = ?",
            (seq, _ts(latest or utcnow()), chat_id),
        )
    return stored, len(fresh)


def _turns(db: sqlite3.Connection, chat_id: str, start: int, end: int | None) -> list[Turn]:
    rows = db.execute(
        "SELECT * FROM turns WHERE chat_id = ? AND seq >= ? AND seq <= ? ORDER BY seq",
        (chat_id, start, end if end is not None else 2**62),
    ).fetchall()
    return [_turn(r) for r in rows]


def _summaries(db: sqlite3.Connection, chat_id: str, level: SummaryLevel | None) -> list[Summary]:
    rows = db.execute(
        "SELECT chat_id, level, start_seq, end_seq, text, updated_at, importance FROM summaries "
        "WHERE chat_id = ? AND (? IS NULL OR level = ?) ORDER BY level, start_seq",
        (chat_id, None if level is None else int(level), None if level is None else int(level)),
    ).fetchall()
    return [
        Summary(
            chat_id=r["chat_id"],
            level=SummaryLevel(r["level"]),
            range=MessageRange(start=r["start_seq"], end=r["end_seq"]),
            text=r["text"],
            updated_at=_dt(r["updated_at"]),
            importance=r["importance"],
        )
        for r in rows
    ]


def _facts(db: sqlite3.Connection, chat_id: str) -> list[FactBlock]:
    rows = db.execute(
        "SELECT chat_id, start_seq, end_seq, text, forgotten, updated_at FROM facts WHERE chat_id = ? ORDER BY start_seq",
        (chat_id,),
    ).fetchall()
    return [_fact_block(r) for r in rows]


def _pins(db: sqlite3.Connection, chat_id: str, *, forgotten: bool) -> list[Pin]:
    rows = db.execute(
        "SELECT * FROM pins WHERE chat_id = ? AND (forgotten_at IS NOT NULL) = ? ORDER BY importance DESC, created_at, id",
        (chat_id, forgotten),
    ).fetchall()
    return [_pin(r) for r in rows]


def _embedder_info(db: sqlite3.Connection) -> tuple[str, int] | None:
    rows = dict(db.execute("SELECT key, value FROM meta WHERE key IN ('embedder', 'embedding_dim')").fetchall())
    if "embedder" not in rows:
        return None
    return rows["embedder"], int(rows["embedding_dim"])


def _check_embedder(db: sqlite3.Connection, embedded: EmbeddedText) -> None:
    info = _embedder_info(db)
    if info == (embedded.embedder, embedded.dim):
        return
    if info is None or not _vector_count(db):
        _set_embedder(db, embedded.embedder, embedded.dim)
        return
    name, dim = info
    raise EmbedderMismatch(
        f"this store's vectors were made by {name} ({dim} dims) but the embedder now is "
        f"{embedded.embedder} ({embedded.dim} dims): run `parla memory reembed` to rebuild them, "
        "or set PARLA_EMBEDDER back"
    )


def _set_embedder(db: sqlite3.Connection, name: str, dim: int) -> None:
    db.executemany(
        "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        [("embedder", name), ("embedding_dim", str(dim))],
    )


def _bump_generation(db: sqlite3.Connection) -> None:
    db.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'")


def _vectors_changed(db: sqlite3.Connection, chat_id: str) -> None:
    """A new generation, and the chat whose vectors it changed, so an open index reloads only that
    chat's rows (a full rebuild only follows `replace_embeddings`)."""
    _bump_generation(db)
    db.execute(
        "INSERT INTO vector_changes (chat_id, generation) VALUES (?, ?) "
        "ON CONFLICT (chat_id) DO UPDATE SET generation = excluded.generation",
        (chat_id, _generation(db)),
    )


# The word counts' row for the empty word counts every window (no real word is empty).
_ALL_WINDOWS = ""


def _count_words(db: sqlite3.Connection, words_json: str, delta: Literal[1, -1]) -> None:
    words = [(_ALL_WINDOWS,), *((w,) for w in json.loads(words_json))]
    if delta > 0:
        db.executemany(
            "INSERT INTO window_words (word, windows) VALUES (?, 1) ON CONFLICT (word) DO UPDATE SET windows = windows + 1",
            words,
        )
    else:  # an upsert would check the new row (a count of -1) before seeing the word is there
        db.executemany("UPDATE window_words SET windows = windows - 1 WHERE word = ?", words)


def _generation(db: sqlite3.Connection) -> int:
    return int(db.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()[0])


_VECTORS = (
    "SELECT id AS chat_id, 'summary_text' AS kind, 0 AS s, 0 AS e, summary_embedding AS v FROM chats "
    "WHERE summary_embedding IS NOT NULL AND {chats} "
    "UNION ALL SELECT chat_id, CASE level WHEN 0 THEN 'chunk' ELSE 'meta' END, start_seq, end_seq, "
    "embedding FROM summaries WHERE {rows} "
    "UNION ALL SELECT chat_id, 'facts', start_seq, end_seq, embedding FROM facts WHERE embedding IS NOT NULL AND {rows} "
    "UNION ALL SELECT chat_id, 'turns', start_seq, end_seq, embedding FROM turn_windows WHERE {rows}"
)


def _vector_rows(db: sqlite3.Connection, chat_ids: Sequence[str] | None = None) -> list[tuple[TextRef, bytes]]:
    """Every vector, or those of some chats."""
    if chat_ids is None:
        rows = db.execute(_VECTORS.format(chats="1", rows="1")).fetchall()
    else:
        marks = ",".join("?" * len(chat_ids))
        sql = _VECTORS.format(chats=f"id IN ({marks})", rows=f"chat_id IN ({marks})")
        rows = db.execute(sql, [*chat_ids] * 4).fetchall()
    return [(text_ref(r[0], r[1], r[2], r[3]), r[4]) for r in rows]


def _vector_count(db: sqlite3.Connection) -> int:
    row = db.execute(
        "SELECT (SELECT count(*) FROM chats WHERE summary_embedding IS NOT NULL) "
        "+ (SELECT count(*) FROM summaries) + (SELECT count(*) FROM facts WHERE embedding IS NOT NULL) "
        "+ (SELECT count(*) FROM turn_windows)"
    ).fetchone()
    return int(row[0])


def _texts_of(db: sqlite3.Connection, refs: list[TextRef]) -> dict[TextRef, str]:
    """The texts of `refs`: each chat's windows (most of a search's texts) in one query, the rest
    one by one."""
    by_chat: dict[str, dict[int, TextRef]] = {}
    for ref in refs:
        if ref.kind == "turns" and ref.range is not None:
            by_chat.setdefault(ref.chat_id, {})[ref.range.start] = ref
    out: dict[TextRef, str] = {}
    for chat_id, starts in by_chat.items():
        rows = db.execute(
            f"SELECT start_seq, text FROM turn_windows WHERE chat_id = ? AND start_seq IN ({','.join('?' * len(starts))})",
            [chat_id, *starts],
        ).fetchall()
        out.update({starts[r[0]]: r[1] for r in rows})
    for ref in refs:
        if ref not in out:
            out[ref] = _text_of(db, ref)
    return out


def _text_of(db: sqlite3.Connection, ref: TextRef) -> str:
    args: tuple[object, ...]
    if ref.kind == "summary_text":
        sql, args = "SELECT summary_text FROM chats WHERE id = ?", (ref.chat_id,)
    elif ref.kind == "facts":
        assert ref.range is not None
        sql = "SELECT text FROM facts WHERE chat_id = ? AND start_seq = ? AND end_seq = ?"
        args = (ref.chat_id, ref.range.start, ref.range.end)
    elif ref.kind == "turns":
        assert ref.range is not None
        sql = "SELECT text FROM turn_windows WHERE chat_id = ? AND start_seq = ?"
        args = (ref.chat_id, ref.range.start)
    else:
        assert ref.range is not None
        sql = "SELECT text FROM summaries WHERE chat_id = ? AND level = ? AND start_seq = ? AND end_seq = ?"
        args = (ref.chat_id, int(_LEVEL_OF_KIND[ref.kind]), ref.range.start, ref.range.end)
    row = db.execute(sql, args).fetchone()
    return row[0] if row else ""


def _pin(r: sqlite3.Row) -> Pin:
    return Pin(
        id=r["id"],
        chat_id=r["chat_id"],
        content=r["content"],
        importance=r["importance"],
        pin_type=r["pin_type"],
        source_turn_id=r["source_turn_id"],
        source_seq=r["source_seq"],
        created_at=_dt(r["created_at"]),
        forgotten_at=_dt(r["forgotten_at"]) if r["forgotten_at"] else None,
    )


_INSERT_PIN = (
    "INSERT INTO pins (id, chat_id, content, importance, pin_type, source_turn_id, source_seq, created_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)


def _pin_row(pin: Pin) -> tuple[object, ...]:
    return (
        pin.id,
        pin.chat_id,
        pin.content,
        pin.importance,
        pin.pin_type,
        pin.source_turn_id,
        pin.source_seq,
        _ts(pin.created_at),
    )


def _fact_block(r: sqlite3.Row) -> FactBlock:
    return FactBlock(
        chat_id=r["chat_id"],
        range=MessageRange(start=r["start_seq"], end=r["end_seq"]),
        lines=stored_fact_lines(r["text"]),
        forgotten=stored_fact_lines(r["forgotten"]),
        updated_at=_dt(r["updated_at"]),
    )
