"""The embedded store's chats, their turns and the commit of a compaction."""

from __future__ import annotations

import sqlite3
from datetime import datetime
from typing import TYPE_CHECKING

from parla.records.chat import Chat, ChatHistory, storable_title
from parla.records.summary import SummaryLevel
from parla.records.turn import Turn, new_id, utcnow

from ...errors import ChatNotFound, StoreError
from ...language.importance import IMPORTANT
from ..checks import exact_id_first, id_prefix_pattern
from ..protocol import (
    AppendResult,
    CompactionCommit,
    MemorySnapshot,
)
from ..scoring import ScoredWrites
from .connection import SQLiteConnection
from .rows import (
    GENERATED_TITLE,
    append_rows,
    chat_of_row,
    facts_of,
    get_chat_row,
    iso,
    pins_of,
    summaries_of,
    turn_of_row,
    turns_of,
    vector_blob,
)
from .vectors import check_embedder, count_words, vectors_changed

if TYPE_CHECKING:
    from parla.records.embedding import EmbeddedText


class SQLiteChats(ScoredWrites, SQLiteConnection):
    # -- chats -----------------------------------------------------------------------------

    async def _create_chat(
        self, chat_id: str | None, title: str | None, created_at: datetime | None, turns: list[Turn]
    ) -> AppendResult:
        chat_id = chat_id or new_id()
        created = created_at or (turns[0].created_at if turns else utcnow())
        title = storable_title(title, chat_id)

        def create(db: sqlite3.Connection) -> AppendResult:
            db.execute(
                "INSERT INTO chats (id, title, created_at, last_activity_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (id) DO NOTHING",
                (chat_id, title, iso(created), iso(created)),
            )
            stored, added = append_rows(db, chat_id, turns)
            return AppendResult(get_chat_row(db, chat_id), stored, added)

        return await self._write(create)

    async def get_chat(self, chat_id: str) -> Chat:
        return await self._read(lambda db: get_chat_row(db, chat_id))

    async def load_memory(
        self, chat_id: str, *, min_importance: float = IMPORTANT, important_limit: int = 30
    ) -> MemorySnapshot:
        def load(db: sqlite3.Connection) -> MemorySnapshot:
            chat = get_chat_row(db, chat_id)
            important = db.execute(
                "SELECT * FROM turns WHERE chat_id = ? AND seq <= ? AND importance >= ? "
                "ORDER BY importance DESC, seq DESC LIMIT ?",
                (chat_id, chat.summarized_through, min_importance, important_limit),
            ).fetchall()
            return MemorySnapshot(
                chat=chat,
                tail=turns_of(db, chat_id, chat.summarized_through + 1, None),
                pins=pins_of(db, chat_id, forgotten=False),
                metas=summaries_of(db, chat_id, SummaryLevel.META),
                facts=facts_of(db, chat_id),
                important=[turn_of_row(r) for r in important],
            )

        return await self._read(load)

    async def find_chats(self, ref: str) -> list[Chat]:
        """Chats whose id is `ref`, starts with `ref`, or whose title is `ref` (any case)."""
        ref = ref.strip()
        if not ref:
            return []
        rows = await self._read(
            lambda db: db.execute(
                "SELECT * FROM chats WHERE id = ? OR id LIKE ? ESCAPE '\\' "
                "OR lower(title) = lower(?) ORDER BY last_activity_at DESC",
                (ref, id_prefix_pattern(ref), ref),
            ).fetchall()
        )
        return [chat_of_row(r) for r in exact_id_first(rows, ref, lambda r: r["id"])]

    async def list_chats(self, limit: int = 50, offset: int = 0) -> list[Chat]:
        rows = await self._read(
            lambda db: db.execute(
                "SELECT * FROM chats ORDER BY last_activity_at DESC, id LIMIT ? OFFSET ?", (limit, offset)
            ).fetchall()
        )
        return [chat_of_row(r) for r in rows]

    async def rename_chat(self, chat_id: str, title: str) -> Chat:
        title = title.strip()
        if not title:
            raise StoreError("a chat title cannot be empty")
        stored = storable_title(title, chat_id)

        def rename(db: sqlite3.Connection) -> Chat:
            cur = db.execute("UPDATE chats SET title = ?, title_generated = 0 WHERE id = ?", (stored, chat_id))
            if cur.rowcount == 0:
                raise ChatNotFound(chat_id)
            return get_chat_row(db, chat_id)

        return await self._write(rename)

    async def delete_chat(self, chat_id: str) -> None:
        def delete(db: sqlite3.Connection) -> None:
            for (words,) in db.execute("SELECT words FROM turn_windows WHERE chat_id = ?", (chat_id,)).fetchall():
                count_words(db, words, -1)
            if db.execute("DELETE FROM chats WHERE id = ?", (chat_id,)).rowcount == 0:
                raise ChatNotFound(chat_id)
            vectors_changed(db, chat_id)

        await self._write(delete)

    # -- turns -----------------------------------------------------------------------------

    async def _append_turns(self, chat_id: str, turns: list[Turn]) -> AppendResult:
        def append(db: sqlite3.Connection) -> AppendResult:
            get_chat_row(db, chat_id)
            stored, added = append_rows(db, chat_id, turns)
            return AppendResult(get_chat_row(db, chat_id), stored, added)

        return await self._write(append)

    async def load_history(self, chat_id: str) -> ChatHistory:
        def load(db: sqlite3.Connection) -> ChatHistory:
            return ChatHistory(chat=get_chat_row(db, chat_id), full_history=turns_of(db, chat_id, 1, None))

        return await self._read(load)

    async def load_turns(self, chat_id: str, start: int = 1, end: int | None = None) -> list[Turn]:
        def load(db: sqlite3.Connection) -> list[Turn]:
            get_chat_row(db, chat_id)
            return turns_of(db, chat_id, start, end)

        return await self._read(load)

    # -- compaction ------------------------------------------------------------------------

    async def commit_compaction(self, commit: CompactionCommit) -> Chat | None:
        title = storable_title(commit.title, commit.chat_id)

        def write(db: sqlite3.Connection) -> Chat | None:
            check_embedder(db, commit.summary_text)
            cur = db.execute(
                "UPDATE chats SET rolling_summary = ?, summarized_through = ?, summary_text = ?, "
                f"summary_embedding = ?, summary_embedder = ?, {GENERATED_TITLE}, "
                "compaction_version = compaction_version + 1 "
                "WHERE id = ? AND compaction_version = ? AND turn_count >= ?",
                (
                    commit.rolling_summary,
                    commit.summarized_through,
                    commit.summary_text.text,
                    vector_blob(commit.summary_text.vector),
                    commit.summary_text.embedder,
                    title,
                    title,
                    commit.chat_id,
                    commit.expected_version,
                    commit.summarized_through,
                ),
            )
            if cur.rowcount == 0:
                get_chat_row(db, commit.chat_id)
                return None
            vectors_changed(db, commit.chat_id)
            return get_chat_row(db, commit.chat_id)

        return await self._write(write)

    async def set_summary_text(
        self, chat_id: str, summary_text: EmbeddedText, expected_version: int, title: str | None = None
    ) -> bool:
        title = storable_title(title, chat_id)

        def write(db: sqlite3.Connection) -> bool:
            check_embedder(db, summary_text)
            cur = db.execute(
                "UPDATE chats SET summary_text = ?, summary_embedding = ?, summary_embedder = ?, "
                f"{GENERATED_TITLE} WHERE id = ? AND compaction_version = ?",
                (
                    summary_text.text,
                    vector_blob(summary_text.vector),
                    summary_text.embedder,
                    title,
                    title,
                    chat_id,
                    expected_version,
                ),
            )
            if cur.rowcount:
                vectors_changed(db, chat_id)
            return bool(cur.rowcount)

        return await self._write(write)
