"""The embedded store's timers and reminders (parla.records.reminder)."""

from __future__ import annotations

import sqlite3
from datetime import timedelta

from parla.records.reminder import Reminder
from parla.records.turn import utcnow

from ..checks import reminder_not_found
from .connection import SQLiteConnection
from .rows import iso

_COLUMNS = (
    "id, text, due_at, time_zone, kind, chat_id, turn_id, device, state, claimed_by, created_at, fired_at, said_at, "
    "cancelled_at"
)


def reminder_of_row(row: sqlite3.Row) -> Reminder:
    return Reminder.model_validate(dict(row))  # moments are ISO text with their offset


def _params(r: Reminder) -> tuple[object, ...]:
    return (
        r.id,
        r.text,
        iso(r.due_at),
        r.time_zone,
        r.kind,
        r.chat_id,
        r.turn_id,
        r.device,
        r.state,
        r.claimed_by,
        iso(r.created_at),
        iso(r.fired_at) if r.fired_at else None,
        iso(r.said_at) if r.said_at else None,
        iso(r.cancelled_at) if r.cancelled_at else None,
    )


class SQLiteReminders(SQLiteConnection):
    async def add_reminder(self, reminder: Reminder) -> Reminder:
        def write(db: sqlite3.Connection) -> Reminder:
            db.execute(
                f"INSERT INTO reminders ({_COLUMNS}) VALUES ({', '.join('?' * 14)}) ON CONFLICT (id) DO NOTHING",
                _params(reminder),
            )
            return reminder_of_row(
                db.execute(f"SELECT {_COLUMNS} FROM reminders WHERE id = ?", (reminder.id,)).fetchone()
            )

        return await self._write(write)

    async def list_reminders(self, *, history: bool = False) -> list[Reminder]:
        query = (
            f"SELECT {_COLUMNS} FROM reminders ORDER BY due_at DESC, id"
            if history
            else f"SELECT {_COLUMNS} FROM reminders WHERE state = 'pending' ORDER BY due_at, id"
        )
        return await self._read(lambda db: [reminder_of_row(r) for r in db.execute(query)])

    async def cancel_reminder(self, reminder_id: str) -> Reminder:
        def write(db: sqlite3.Connection) -> Reminder:
            db.execute(
                "UPDATE reminders SET state = 'cancelled', cancelled_at = ? WHERE id = ? AND state = 'pending'",
                (iso(utcnow()), reminder_id),
            )
            row = db.execute(f"SELECT {_COLUMNS} FROM reminders WHERE id = ?", (reminder_id,)).fetchone()
            if row is None:
                raise reminder_not_found(reminder_id)
            return reminder_of_row(row)

        return await self._write(write)

    async def claim_reminder(self, reminder_id: str, device: str) -> Reminder | None:
        def write(db: sqlite3.Connection) -> Reminder | None:
            row = db.execute(
                "UPDATE reminders SET state = 'fired', claimed_by = ?, fired_at = ? "
                f"WHERE id = ? AND state = 'pending' RETURNING {_COLUMNS}",
                (device, iso(utcnow()), reminder_id),
            ).fetchone()
            return None if row is None else reminder_of_row(row)

        return await self._write(write)

    async def mark_reminder_said(self, reminder_id: str, device: str) -> Reminder | None:
        def write(db: sqlite3.Connection) -> Reminder | None:
            now = iso(utcnow())
            db.execute(
                "UPDATE reminders SET state = 'fired', claimed_by = ?, fired_at = coalesce(fired_at, ?), "
                "said_at = coalesce(said_at, ?) "
                "WHERE id = ? AND (state = 'pending' OR (state = 'fired' AND claimed_by = ?))",
                (device, now, now, reminder_id, device),
            )
            row = db.execute(
                f"SELECT {_COLUMNS} FROM reminders WHERE id = ? AND state = 'fired' AND claimed_by = ?",
                (reminder_id, device),
            ).fetchone()
            return None if row is None else reminder_of_row(row)

        return await self._write(write)

    async def unsaid_reminders(self, device: str, stale_s: float) -> list[Reminder]:
        query = (
            f"SELECT {_COLUMNS} FROM reminders WHERE state = 'fired' AND said_at IS NULL "
            "AND (claimed_by = ? OR fired_at <= ?) ORDER BY due_at, id"
        )
        stale = iso(utcnow() - timedelta(seconds=stale_s))  # the stored moments' fixed ISO form sorts as time
        return await self._read(lambda db: [reminder_of_row(r) for r in db.execute(query, (device, stale))])

    async def reclaim_reminder(self, reminder_id: str, device: str, stale_s: float) -> Reminder | None:
        def write(db: sqlite3.Connection) -> Reminder | None:
            now = utcnow()
            row = db.execute(
                "UPDATE reminders SET claimed_by = ?, fired_at = ? "
                "WHERE id = ? AND state = 'fired' AND said_at IS NULL AND (claimed_by = ? OR fired_at <= ?) "
                f"RETURNING {_COLUMNS}",
                (device, iso(now), reminder_id, device, iso(now - timedelta(seconds=stale_s))),
            ).fetchone()
            return None if row is None else reminder_of_row(row)

        return await self._write(write)
