"""The embedded store's queue of chats waiting for their summaries (memory.compaction.summary_queue)."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence

from ..protocol import QueueState
from .connection import SQLiteConnection


class SQLiteQueue(SQLiteConnection):
    async def queue_summaries(self, chat_ids: Sequence[str]) -> None:
        now = time.time()

        def write(db: sqlite3.Connection) -> None:
            # one after another in the order given: the queue hands them out in that order
            db.executemany(
                "INSERT INTO summary_queue (chat_id, queued_at, not_before) SELECT ?, ?, ? "
                "WHERE EXISTS (SELECT 1 FROM chats WHERE id = ?) ON CONFLICT (chat_id) DO NOTHING",
                [(cid, now + i * 1e-6, now, cid) for i, cid in enumerate(dict.fromkeys(chat_ids))],
            )

        if chat_ids:
            await self._write(write)

    async def take_summary(self, lease_s: float) -> str | None:
        now = time.time()

        def write(db: sqlite3.Connection) -> str | None:
            row = db.execute(
                "UPDATE summary_queue SET not_before = ? WHERE chat_id = (SELECT chat_id FROM summary_queue "
                "WHERE not_before <= ? ORDER BY queued_at, chat_id LIMIT 1) RETURNING chat_id",
                (now + lease_s, now),
            ).fetchone()
            return None if row is None else str(row[0])

        return await self._write(write)

    async def settle_summary(self, chat_id: str, retry_in_s: float | None = None, error: str | None = None) -> None:
        now = time.time()

        def write(db: sqlite3.Connection) -> None:
            if retry_in_s is None:
                db.execute("DELETE FROM summary_queue WHERE chat_id = ?", (chat_id,))
            else:
                db.execute(
                    "UPDATE summary_queue SET not_before = ?, attempts = attempts + 1, last_error = ? "
                    "WHERE chat_id = ?",
                    (now + retry_in_s, error, chat_id),
                )

        await self._write(write)

    async def summary_queue(self) -> QueueState:
        def read(db: sqlite3.Connection) -> QueueState:
            waiting, due, error = db.execute(
                "SELECT count(*), min(not_before), "
                "(SELECT last_error FROM summary_queue WHERE last_error IS NOT NULL ORDER BY not_before DESC LIMIT 1) "
                "FROM summary_queue"
            ).fetchone()
            return QueueState(
                waiting=waiting, next_due_in_s=max(0.0, due - time.time()) if waiting else None, last_error=error
            )

        return await self._read(read)
