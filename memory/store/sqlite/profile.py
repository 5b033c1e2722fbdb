"""The embedded store's profile of the user (parla.records.profile), across chats."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from parla.records.profile import ProfileEntry
from parla.records.turn import utcnow

from ..checks import profile_entry_not_found
from .connection import SQLiteConnection
from .rows import iso

_COLUMNS = (
    "id, content, importance, subject, origin, chat_id, source_turn_id, source_seq, said_at, created_at, "
    "superseded_by, superseded_at, forgotten_at"
)
_INSERT = f"INSERT INTO profile ({_COLUMNS}) VALUES ({', '.join('?' * 13)})"
_EDIT = (
    " ON CONFLICT (id) DO UPDATE SET content = excluded.content, importance = excluded.importance, "
    "subject = excluded.subject"
)


def entry_of_row(row: sqlite3.Row) -> ProfileEntry:
    # the columns are the entry's fields; its moments are stored as ISO text, which pydantic reads
    return ProfileEntry.model_validate(dict(row))


def _params(e: ProfileEntry) -> tuple[object, ...]:
    return (
        e.id,
        e.content,
        e.importance,
        e.subject,
        e.origin,
        e.chat_id,
        e.source_turn_id,
        e.source_seq,
        iso(e.said_at),
        iso(e.created_at),
        e.superseded_by,
        iso(e.superseded_at) if e.superseded_at else None,
        iso(e.forgotten_at) if e.forgotten_at else None,
    )


def _supersede(db: sqlite3.Connection, row: sqlite3.Row) -> sqlite3.Row:
    """Settle which entry of `row`'s subject is current: the one said last (ties: the one saved last)."""
    if row["subject"] is None:
        return row
    now = iso(utcnow())
    later = db.execute(
        "SELECT id FROM profile WHERE subject = ? AND id != ? AND superseded_by IS NULL AND forgotten_at IS NULL "
        "AND said_at > ? ORDER BY said_at DESC, id LIMIT 1",
        (row["subject"], row["id"], row["said_at"]),
    ).fetchone()
    if later is not None:
        updated: sqlite3.Row = db.execute(
            "UPDATE profile SET superseded_by = ?, superseded_at = ? WHERE id = ? RETURNING *",
            (later["id"], now, row["id"]),
        ).fetchone()
        return updated
    db.execute(
        "UPDATE profile SET superseded_by = ?, superseded_at = ? "
        "WHERE subject = ? AND id != ? AND superseded_by IS NULL AND said_at <= ?",
        (row["id"], now, row["subject"], row["id"], row["said_at"]),
    )
    return row


class SQLiteProfile(SQLiteConnection):
    async def save_profile(self, entries: Sequence[ProfileEntry], *, edit: bool = False) -> list[ProfileEntry]:
        statement = f"{_INSERT}{_EDIT if edit else ' ON CONFLICT (id) DO NOTHING'} RETURNING *"

        def write(db: sqlite3.Connection) -> list[ProfileEntry]:
            saved = []
            for entry in entries:
                row = db.execute(statement, _params(entry)).fetchone()
                if row is not None:
                    saved.append(entry_of_row(_supersede(db, row)))
            return saved

        return await self._write(write) if entries else []

    async def list_profile(self, *, history: bool = False) -> list[ProfileEntry]:
        query = (
            f"SELECT {_COLUMNS} FROM profile ORDER BY said_at DESC, id"
            if history
            else f"SELECT {_COLUMNS} FROM profile WHERE superseded_by IS NULL AND forgotten_at IS NULL "
            "ORDER BY importance DESC, said_at DESC, id"
        )
        return await self._read(lambda db: [entry_of_row(r) for r in db.execute(query)])

    async def set_profile_forgotten(self, entry_id: str, forgotten: bool) -> ProfileEntry:
        def write(db: sqlite3.Connection) -> ProfileEntry:
            row = db.execute(
                "UPDATE profile SET forgotten_at = ? WHERE id = ? RETURNING *",
                (iso(utcnow()) if forgotten else None, entry_id),
            ).fetchone()
            if row is None:
                raise profile_entry_not_found(entry_id)
            return entry_of_row(row)

        return await self._write(write)
