"""The embedded store: one SQLite file (WAL), the same semantics as the Supabase store.

Turns live in their own table rather than in a JSON column so an append costs the same at turn
10 and at turn 5,000; full_history and assistant_history are read from it. Vector search runs
over the index files beside the store (sqlite_vector_file), opened by the first search and kept
up to the embedding generation (bumped by every transaction that writes a vector, in any
process); reading chats and turns loads neither them nor numpy.
"""

from __future__ import annotations

import sqlite3

from parla.records.progress import PendingWrites
from parla.records.stats import MemoryStats

from ...language.importance import IMPORTANT
from ..outbox import BY_REMOTE, queued_elsewhere
from .chats import SQLiteChats
from .memory import SQLiteMemory
from .profile import SQLiteProfile
from .queue import SQLiteQueue
from .reminders import SQLiteReminders
from .rows import get_chat_row, parse_ts
from .search import SQLiteSearch
from .vectors import embedder_info_of


class SQLiteChatStore(SQLiteChats, SQLiteMemory, SQLiteProfile, SQLiteReminders, SQLiteSearch, SQLiteQueue):
    """`ChatStore` on one SQLite file. Use as `async with SQLiteChatStore(path) as store:`.

    The operations are split by concern over one connection (`SQLiteConnection`): chats, turns and
    compaction (`SQLiteChats`), summaries, facts and pins (`SQLiteMemory`), the user's profile
    (`SQLiteProfile`), timers and reminders (`SQLiteReminders`), search and vectors, across chats and
    inside one (`SQLiteSearch`), chats waiting for summaries (`SQLiteQueue`); this class
    adds what concerns the whole file."""

    # -- stats -----------------------------------------------------------------------------

    async def flush(self) -> int:
        return 0  # every write is on disk when its call returns

    async def pending_writes(self) -> PendingWrites:
        """None of its own (every write is on disk when its call returns); what a Supabase store
        queued in this file's outbox (PARLA_STORE was supabase) waits for that project, said so."""

        def read(db: sqlite3.Connection) -> PendingWrites:
            if db.execute("SELECT 1 FROM sqlite_master WHERE name = 'outbox'").fetchone() is None:
                return PendingWrites()
            return PendingWrites(elsewhere=queued_elsewhere(db.execute(BY_REMOTE).fetchall()))

        return await self._read(read)

    async def schema_version(self) -> None:
        return None  # the store creates and migrates its own file

    async def stats(self, chat_id: str | None = None) -> MemoryStats:
        def read(db: sqlite3.Connection) -> MemoryStats:
            if chat_id is not None:
                get_chat_row(db, chat_id)
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
            info = embedder_info_of(db)
            return MemoryStats(
                total_chats=one[0],
                total_messages=one[1],
                total_summaries=one[2],
                total_facts=one[3],
                total_pins=one[4],
                oldest_message=parse_ts(one[5]) if one[5] else None,
                newest_message=parse_ts(one[6]) if one[6] else None,
                average_importance=round(one[7], 2) if one[7] is not None else None,
                embedder=info[0] if info else None,
                embedding_dim=info[1] if info else None,
                embedded_texts=one[11],
                auto_pins=one[8],
                average_turn_importance=round(one[9], 2) if one[9] is not None else None,
                important_turns=one[10],
            )

        return await self._read(read)
