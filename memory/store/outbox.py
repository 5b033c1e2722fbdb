"""The local durable outbox of a remote store: writes of turns wait here until acknowledged.

A turn is written to the outbox (a table in the local SQLite file, committed to disk) before the
remote call and leaves it only when the remote store has acknowledged it, so a network outage of
any length, or a crash between the two, loses no turn. Entries are replayed in the order they were
queued; the remote calls are idempotent by turn id, so replaying an entry that did reach the
server (the answer was lost) stores nothing twice.

An entry the server refuses for good (bad input, a chat that no longer exists) is not retried
forever, which would block every later turn: it is marked failed with the server's message and
kept, so nothing is deleted; `parla stats` counts it.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import aiosqlite

from memory.store import StoreError
from memory.turn import utcnow

OutboxOp = Literal["create_chat", "append_turns"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS outbox (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    remote TEXT NOT NULL,
    op TEXT NOT NULL CHECK (op IN ('create_chat', 'append_turns')),
    chat_id TEXT NOT NULL,
    payload TEXT NOT NULL,
    queued_at TEXT NOT NULL,
    failed TEXT
)
"""


@dataclass(frozen=True)
class OutboxEntry:
    id: int
    op: OutboxOp
    chat_id: str
    payload: dict[str, Any]


class Outbox:
    """Entries for one remote (its URL and user) in the SQLite file at `path`."""

    def __init__(self, path: Path | str, remote: str) -> None:
        self.path = Path(path)
        self.remote = remote
        self._db: aiosqlite.Connection | None = None

    async def open(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            db = await aiosqlite.connect(self.path)
            for pragma in ("journal_mode=WAL", "busy_timeout=10000", "synchronous=FULL"):
                await db.execute(f"PRAGMA {pragma}")
            await db.execute(_SCHEMA)
            await db.commit()
        except sqlite3.Error as e:
            raise StoreError(f"cannot open the outbox in {self.path}: {e}") from e
        self._db = db

    async def close(self) -> None:
        if self._db is not None:
            await self._db.close()
            self._db = None

    def _conn(self) -> aiosqlite.Connection:
        if self._db is None:
            raise StoreError("the outbox is not open")
        return self._db

    async def put(self, op: OutboxOp, chat_id: str, payload: dict[str, Any]) -> int:
        """Queue a write; it is on disk (synchronous=FULL) when this returns."""
        db = self._conn()
        cur = await db.execute(
            "INSERT INTO outbox (remote, op, chat_id, payload, queued_at) VALUES (?, ?, ?, ?, ?)",
            (self.remote, op, chat_id, json.dumps(payload, ensure_ascii=False), utcnow().isoformat()),
        )
        await db.commit()
        assert cur.lastrowid is not None
        return cur.lastrowid

    async def pending(self) -> list[OutboxEntry]:
        rows = await (
            await self._conn().execute(
                "SELECT id, op, chat_id, payload FROM outbox WHERE remote = ? AND failed IS NULL ORDER BY id",
                (self.remote,),
            )
        ).fetchall()
        return [OutboxEntry(r[0], r[1], r[2], json.loads(r[3])) for r in rows]

    async def ack(self, entry_id: int) -> None:
        db = self._conn()
        await db.execute("DELETE FROM outbox WHERE id = ?", (entry_id,))
        await db.commit()

    async def fail(self, entry_id: int, reason: str) -> None:
        db = self._conn()
        await db.execute("UPDATE outbox SET failed = ? WHERE id = ?", (reason, entry_id))
        await db.commit()

    async def depth(self) -> tuple[int, int]:
        """(entries waiting, entries refused for good)."""
        row = await (
            await self._conn().execute(
                "SELECT count(*) FILTER (WHERE failed IS NULL), count(*) FILTER (WHERE failed IS NOT NULL) "
                "FROM outbox WHERE remote = ?",
                (self.remote,),
            )
        ).fetchone()
        assert row is not None
        return int(row[0]), int(row[1])
