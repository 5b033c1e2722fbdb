"""The local durable outbox of a remote store: writes wait here until acknowledged.

Turns, and every write the user asks for (a new chat, a pin, a rename, a forget, a delete), are
queued the same way, in one order, so a forget never reaches the server before its pin. A turn is written to the outbox (a table in the local SQLite file, committed to disk) before the
remote call and leaves it only when the remote store has acknowledged it, so a network outage of
any length, or a crash between the two, loses no turn. Entries are replayed in the order they were
queued; the remote calls are idempotent by turn id, so replaying an entry that did reach the
server (the answer was lost) stores nothing twice.

An entry the server refuses for good (bad input, a chat that no longer exists) is not retried
forever, which would block every later turn: it is marked failed with the server's message and
kept, so nothing is deleted; `parla stats` counts it.

The file itself can go bad under the running process. A damaged file (not a database, or corrupt
pages) would stop every write, so it is moved aside, kept under a timestamped name for recovery,
and a fresh outbox takes its place with every entry that could still be read from the old one. A
file deleted (or replaced) while Parla runs would take the queue with it when the process ends:
each operation checks that the path still names the file it opened, and if not, the entries are
carried over to a new file there. Both are logged as errors and reported by `problems` and
`set_aside_files()` (`parla status`, `parla stats`).

Entries are queued for one remote: the project's URL and the user (`remote_of`). Those of another
(the URL or the user changed since) are kept, never sent to this one: `elsewhere()` counts them
(`parla status`, `parla doctor`), and they go to their project when Parla points at it again
(`parla outbox send`), or are dropped on the user's word (`drop`).

A file of another user is never used: its owner chose the writes it queues, which would go out
with this user's credentials. One there at the start is refused (`ForeignFile`, with the fix); one
put there while Parla runs is moved aside, unused, and the queue carried over to a new file.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sqlite3
import uuid
from collections.abc import Awaitable, Callable
from contextlib import suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, TypeVar, get_args

import aiosqlite

from parla.records.progress import QueuedElsewhere
from parla.records.turn import utcnow

from ..errors import StoreError
from .sqlite.file import others_files, refuse_others

log = logging.getLogger(__name__)

T = TypeVar("T")

OutboxOp = Literal[
    "create_chat",
    "append_turns",
    "add_pin",
    "rename_chat",
    "set_pin_forgotten",
    "delete_pin",
    "delete_chat",
    "set_fact_lines",
    "add_reminder",
    "cancel_reminder",
    "mark_reminder_said",
    "save_profile",
    "set_profile_forgotten",
]
_OPS = ", ".join(f"'{op}'" for op in get_args(OutboxOp))
_TURN_OPS = ("create_chat", "append_turns")
# An outbox file made by an earlier version lists fewer ops here: it is rebuilt (`_widen_ops`).
_CHECK = f"CHECK (op IN ({_OPS}))"

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS outbox (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    remote TEXT NOT NULL,
    op TEXT NOT NULL {_CHECK},
    chat_id TEXT NOT NULL,
    payload TEXT NOT NULL,
    queued_at TEXT NOT NULL,
    failed TEXT,
    write_key TEXT
)
"""
_COLUMNS = "id, remote, op, chat_id, payload, queued_at, failed, write_key"
_SIDECARS = ("-wal", "-shm", "-journal")  # SQLite's files next to the database, by the same name
# Entries of every remote, by remote, oldest first (what `QueuedElsewhere` counts).
BY_REMOTE = (
    "SELECT remote, count(*) FILTER (WHERE failed IS NULL), count(*) FILTER (WHERE failed IS NOT NULL) "
    "FROM outbox GROUP BY remote ORDER BY min(id)"
)
_SET_ASIDE_MARK = ".damaged-"
_FOREIGN_MARK = ".of-another-user-"


def remote_of(url: str, user_id: str | None) -> str:
    """The remote entries are queued for: a project's URL and its user (None: the signed-in session)."""
    return f"{url}#{user_id or 'session'}"


def queued_elsewhere(rows: list[tuple[str, int, int]], current: str | None = None) -> tuple[QueuedElsewhere, ...]:
    """`BY_REMOTE`'s rows as what waits for remotes other than `current`."""
    found = []
    for remote, waiting, refused in rows:
        if remote != current:
            project, _, user = remote.rpartition("#")
            found.append(QueuedElsewhere(project, user, int(waiting), int(refused)))
    return tuple(found)


@dataclass(frozen=True)
class OutboxEntry:
    id: int
    op: OutboxOp
    chat_id: str
    payload: dict[str, Any]
    # sent with the write, so the server answers a retry of it with its first try's result; None
    # for an entry queued by a version without keys
    key: str | None = None
    # an earlier try in this round failed after it may have reached the server (its answer lost)
    tried_before: bool = False


async def _nothing(db: aiosqlite.Connection) -> None:
    pass


async def _to_the_end(work: Awaitable[T]) -> T:
    """`work` run to its end even when the caller is cancelled meanwhile (the cancellation is then
    raised after it): a local write stopped half way would leave its transaction open, holding the
    file's write lock, and a queue being carried over to a new file exists only in memory."""
    task = asyncio.ensure_future(work)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        await asyncio.wait([task])
        if not task.cancelled() and task.exception() is not None:
            log.error("an outbox operation failed after its caller was cancelled", exc_info=task.exception())
        raise


async def _add_write_key(db: aiosqlite.Connection) -> None:
    """An outbox table of a version without write keys gains the column (its entries keep none)."""
    columns = {r[1] for r in await (await db.execute("PRAGMA table_info(outbox)")).fetchall()}
    if "write_key" not in columns:
        await db.execute("ALTER TABLE outbox ADD COLUMN write_key TEXT")


async def _widen_ops(db: aiosqlite.Connection) -> None:
    """An outbox table of an earlier version (its CHECK lists fewer ops) rebuilt to accept every
    op, its entries and ids kept."""
    row = await (await db.execute("SELECT sql FROM sqlite_master WHERE name = 'outbox'")).fetchone()
    if row is None or _CHECK in row[0]:
        return
    await db.execute("ALTER TABLE outbox RENAME TO outbox_old")
    await db.execute(_SCHEMA)
    await db.execute(f"INSERT INTO outbox ({_COLUMNS}) SELECT {_COLUMNS} FROM outbox_old")
    await db.execute("DROP TABLE outbox_old")


def _damaged(e: sqlite3.Error) -> bool:
    name = getattr(e, "sqlite_errorname", "")
    return name == "SQLITE_NOTADB" or name.startswith("SQLITE_CORRUPT")


class _Damaged(sqlite3.DatabaseError):
    """The file opened, but its outbox table fails SQLite's check."""

    sqlite_errorname = "SQLITE_CORRUPT"


class Outbox:
    """Entries for one remote (its URL and user) in the SQLite file at `path`."""

    def __init__(self, path: Path | str, remote: str) -> None:
        self.path = Path(path)
        self.remote = remote
        self._db: aiosqlite.Connection | None = None
        self._identity: tuple[int, int] | None = None  # (device, inode) of the file opened
        self._lock = asyncio.Lock()  # one check-and-replace at a time
        self._last_id = 0  # ids are never reused, even in a new file: a send in flight acks by id
        self.problems: list[str] = []  # what happened to the file in this run, newest last

    async def open(self) -> None:
        await _to_the_end(self._open())

    async def _open(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            await self._connect()
        except sqlite3.Error as e:
            if not _damaged(e):
                raise StoreError(f"cannot open the outbox in {self.path}: {e}") from e
            rows = await self._salvage()
            await self._replace(f"the outbox file {self.path} is damaged ({e})", rows, set_aside=True)

    async def _salvage(self) -> list[tuple[Any, ...]]:
        try:
            db = await aiosqlite.connect(self.path)
        except sqlite3.Error:
            return []
        try:
            return await self._read_all(db)
        finally:
            with suppress(sqlite3.Error):
                await db.close()

    async def _connect(self) -> None:
        await asyncio.to_thread(refuse_others, self.path)
        db = await aiosqlite.connect(self.path)
        try:
            for pragma in ("journal_mode=WAL", "busy_timeout=10000", "synchronous=FULL"):
                await db.execute(f"PRAGMA {pragma}")
            await db.execute(_SCHEMA)
            await _add_write_key(db)
            await _widen_ops(db)
            await db.commit()
            # reads every page of the outbox table: a damaged one is found now, not at a later write
            (verdict,) = await (await db.execute("PRAGMA quick_check(outbox)")).fetchone() or ("no answer",)
            if verdict != "ok":
                raise _Damaged(verdict)
            st = os.stat(self.path)
        except BaseException:
            with suppress(sqlite3.Error):
                await db.close()
            raise
        self._db, self._identity = db, (st.st_dev, st.st_ino)

    async def close(self) -> None:
        if self._db is None:
            return
        try:
            await self._run(_nothing)  # a file deleted meanwhile: its queue moves to a new one before the end
        finally:
            if self._db is not None:
                await self._db.close()
                self._db = None

    def set_aside_files(self) -> list[Path]:
        """Damaged outbox files moved aside, in this run or an earlier one (kept for recovery)."""
        pattern = f"{self.path.name}{_SET_ASIDE_MARK}*"
        return sorted(p for p in self.path.parent.glob(pattern) if not p.name.endswith(_SIDECARS))

    # -- the file under the process -------------------------------------------------------

    async def _run(self, op: Callable[[aiosqlite.Connection], Awaitable[T]]) -> T:
        """`op` on the outbox, after checking that the file is still the one opened; a file found
        damaged on the way is replaced (what can be read of it carried over) and `op` runs again."""
        return await _to_the_end(self._run_locked(op))

    async def _run_locked(self, op: Callable[[aiosqlite.Connection], Awaitable[T]]) -> T:
        async with self._lock:
            if not self._still_there():
                rows = await self._read_all(self._conn())
                what = f"the outbox file {self.path} was deleted or replaced while Parla ran"
                await self._replace(what, rows)
            try:
                return await op(self._conn())
            except sqlite3.Error as e:
                if not _damaged(e):
                    raise
                rows = await self._read_all(self._conn())
                what = f"the outbox file {self.path} is damaged ({e})"
                # unless another process already moved it aside and made a new one there
                await self._replace(what, rows, set_aside=self._still_there())
            return await op(self._conn())

    def _conn(self) -> aiosqlite.Connection:
        if self._db is None:
            raise StoreError("the outbox is not open")
        return self._db

    def _still_there(self) -> bool:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return False
        return (st.st_dev, st.st_ino) == self._identity

    @staticmethod
    async def _read_all(db: aiosqlite.Connection) -> list[tuple[Any, ...]]:
        """Every entry that can still be read, in order; reading stops at the first damaged page."""
        rows: list[tuple[Any, ...]] = []
        with suppress(sqlite3.Error):
            async with db.execute(f"SELECT {_COLUMNS} FROM outbox ORDER BY id") as cur:
                async for row in cur:
                    rows.append(tuple(row))
        return rows

    async def _replace(self, what: str, rows: list[tuple[Any, ...]], set_aside: bool = False) -> None:
        """An outbox file at `path` holding `rows`: a new one, or the file someone put there; the
        file there is moved aside first when `set_aside`, when it turns out damaged itself, or when
        it is another user's (kept, never read)."""
        if self._db is not None:
            with suppress(sqlite3.Error):
                await self._db.close()
            self._db = None
        moved = self._move_aside() if set_aside else None
        theirs = None
        if moved is None and (owners := others_files(self.path)):
            theirs = f"; the file of another user (uid {owners[0]}) put there is kept, unused, as {self._move_aside(_FOREIGN_MARK)}"
        if not self.path.exists():  # SQLite would replay another file's leftover journal into the new one
            for suffix in _SIDECARS:
                Path(f"{self.path}{suffix}").unlink(missing_ok=True)
        try:
            await self._connect()
        except sqlite3.Error as e:
            if not _damaged(e) or moved is not None:
                raise
            moved = self._move_aside()
            await self._connect()
        db = self._conn()
        await db.executemany(f"INSERT OR IGNORE INTO outbox ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
        last = max([self._last_id, *(r[0] for r in rows)])
        await db.execute(
            "INSERT INTO sqlite_sequence (name, seq) SELECT 'outbox', 0 "
            "WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'outbox')"
        )
        await db.execute("UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = 'outbox'", (last,))
        await db.commit()
        kept = f"; the damaged file is kept as {moved}" if moved else theirs or ""
        message = f"{what}: a new outbox was made with the {len(rows)} entries that could be read{kept}"
        self.problems.append(message)
        log.error(message, extra={"event": "outbox_replaced", "entries": len(rows)})

    def _move_aside(self, mark: str = _SET_ASIDE_MARK) -> Path:
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        target = self.path.with_name(f"{self.path.name}{mark}{stamp}")
        for suffix in ("", *_SIDECARS):
            with suppress(FileNotFoundError):
                os.replace(f"{self.path}{suffix}", f"{target}{suffix}")
        return target

    # -- entries ---------------------------------------------------------------------------

    async def put(self, op: OutboxOp, chat_id: str, payload: dict[str, Any]) -> int:
        """Queue a write; it is on disk (synchronous=FULL) when this returns. The same turns queued
        before (a caller trying again after an outage or a refusal) are queued in the entry they
        have, not in a second one, and keep its write key. Any other write is queued anew: a rename
        back to an earlier title must still come after the rename between them."""
        row = (self.remote, op, chat_id, json.dumps(payload, ensure_ascii=False))

        async def insert(db: aiosqlite.Connection) -> int:
            again = (
                await (
                    await db.execute(
                        "UPDATE outbox SET failed = NULL WHERE id = (SELECT max(id) FROM outbox WHERE remote = ? "
                        "AND op = ? AND chat_id = ? AND payload = ?) RETURNING id",
                        row,
                    )
                ).fetchone()
                if op in _TURN_OPS
                else None
            )
            if again is not None:
                entry_id = int(again[0])
            else:
                cur = await db.execute(
                    "INSERT INTO outbox (remote, op, chat_id, payload, queued_at, write_key) VALUES (?, ?, ?, ?, ?, ?)",
                    (*row, utcnow().isoformat(), str(uuid.uuid4())),
                )
                assert cur.lastrowid is not None
                entry_id = cur.lastrowid
            await db.commit()
            self._last_id = max(self._last_id, entry_id)
            return entry_id

        return await self._run(insert)

    async def pending(self) -> list[OutboxEntry]:
        async def select(db: aiosqlite.Connection) -> list[OutboxEntry]:
            rows = await (
                await db.execute(
                    "SELECT id, op, chat_id, payload, write_key FROM outbox "
                    "WHERE remote = ? AND failed IS NULL ORDER BY id",
                    (self.remote,),
                )
            ).fetchall()
            self._last_id = max([self._last_id, *(r[0] for r in rows)])
            return [OutboxEntry(r[0], r[1], r[2], json.loads(r[3]), r[4]) for r in rows]

        return await self._run(select)

    async def ack(self, entry_id: int) -> None:
        await self._write("DELETE FROM outbox WHERE id = ?", (entry_id,))

    async def fail(self, entry_id: int, reason: str) -> None:
        await self._write("UPDATE outbox SET failed = ? WHERE id = ?", (reason, entry_id))

    async def _write(self, statement: str, params: tuple[Any, ...]) -> None:
        async def write(db: aiosqlite.Connection) -> None:
            await db.execute(statement, params)
            await db.commit()

        await self._run(write)

    async def depth(self) -> tuple[int, int]:
        """(entries waiting, entries refused for good)."""

        async def count(db: aiosqlite.Connection) -> tuple[int, int]:
            row = await (
                await db.execute(
                    "SELECT count(*) FILTER (WHERE failed IS NULL), count(*) FILTER (WHERE failed IS NOT NULL) "
                    "FROM outbox WHERE remote = ?",
                    (self.remote,),
                )
            ).fetchone()
            assert row is not None
            return int(row[0]), int(row[1])

        return await self._run(count)

    async def elsewhere(self) -> tuple[QueuedElsewhere, ...]:
        """What waits for other remotes (another project, or another user of it)."""

        async def count(db: aiosqlite.Connection) -> tuple[QueuedElsewhere, ...]:
            rows = await (await db.execute(BY_REMOTE)).fetchall()
            return queued_elsewhere([tuple(r) for r in rows], self.remote)

        return await self._run(count)

    async def drop(self, project: str) -> int:
        """Delete every entry queued for `project` (a URL; each of its users), never this remote's;
        how many there were. The user asked for it: the writes will not reach that project."""

        async def delete(db: aiosqlite.Connection) -> int:
            cur = await db.execute(
                "DELETE FROM outbox WHERE remote != ? AND substr(remote, 1, length(?) + 1) = ? || '#'",
                (self.remote, project, project),
            )
            await db.commit()
            return cur.rowcount

        return await self._run(delete)
