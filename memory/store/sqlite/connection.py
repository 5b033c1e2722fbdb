"""The embedded store's connection: one thread, one SQLite file, one transaction per operation."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Self, TypeVar

from ...config import MemoryConfig
from ...errors import StoreError
from .file import create_private, store_error, tighten
from .identity import FileWatch
from .rows import half_vector, stored_turn_importance
from .schema import MIGRATIONS

if TYPE_CHECKING:
    from .vector_file import VectorFile

T = TypeVar("T")
log = logging.getLogger("parla.memory")

# Another process's write lock is waited for up to BUSY_WAIT_S, in slices of BUSY_SLICE_MS so that
# an operation whose caller gave up (cancelled: a shutdown) stops waiting at the next slice
# instead of holding the connection's thread, and the store's close, for the whole wait.
BUSY_WAIT_S = 10.0
BUSY_SLICE_MS = 200


class SQLiteConnection:
    """The connection every part of the embedded store runs its operations on.

    One thread owns the connection, and every operation is one function run there from BEGIN to
    COMMIT or ROLLBACK, awaited once. Cancelling the awaiting task (a tool timeout, a reconnect, a
    TaskGroup exiting) therefore never leaves a transaction open or the file's write lock held: the
    function finishes on its own, and rolls back instead if it was abandoned before it began its
    work (for instance while waiting for another process's write lock). Before each operation
    the files are checked to still be the database opened (sqlite_identity)."""

    def __init__(self, path: Path | str, config: MemoryConfig | None = None) -> None:
        self.path = Path(path)
        self._config = config or MemoryConfig.model_validate({})  # only its index_* knobs are read
        self._thread: ThreadPoolExecutor | None = None
        self._db: sqlite3.Connection | None = None
        self._watch = FileWatch(self.path)  # touched only in the connection's thread
        self._vectors: VectorFile | None = None  # touched only in the connection's thread
        self._wrote = False
        self._aside: _Aside | None = None

    @property
    def _vector_file(self) -> VectorFile:
        """The vector index files, opened by the first search: the commands that only read chats
        and turns (`parla chats`, `show`, `stats`) load no numpy (tests/daemon/test_cli_startup.py)."""
        if self._vectors is None:
            from .vector_file import VectorFile

            self._vectors = VectorFile(self.path, self._config)
        return self._vectors

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
            thread.submit(self._close_opened, opening)
            thread.shutdown(wait=False)
            raise
        self._thread = thread

    async def close(self) -> None:
        thread, db = self._thread, self._db
        if thread is None or db is None:
            return
        self._thread = self._db = None
        if self._aside is not None:  # before the first: the last connection to close checkpoints
            aside, self._aside = self._aside, None
            await aside.close()
        closing = thread.submit(self._close_files, db)  # after every operation already queued
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
            # secure_delete: what is deleted or forgotten (a text, its vector) is overwritten, not left
            # in free pages; some SQLite builds default to off
            for pragma in (
                "journal_mode=WAL",
                "foreign_keys=ON",
                f"busy_timeout={BUSY_SLICE_MS}",
                "synchronous=NORMAL",
                "secure_delete=ON",
            ):
                db.execute(f"PRAGMA {pragma}")
            db.create_function("parla_turn_importance", 2, stored_turn_importance, deterministic=True)
            db.create_function("parla_half_vector", 1, half_vector, deterministic=True)
            transaction(db, "BEGIN IMMEDIATE", self._migrate, threading.Event())
            tighten(self.path)
            self._watch.opened()
        except BaseException as e:
            db.close()
            if isinstance(e, sqlite3.Error):
                raise store_error(self.path, e, "open") from e
            raise
        return db

    def _close_files(self, db: sqlite3.Connection) -> None:
        """Bring the vector index up to the store before closing after a write, so the next process
        to open it (the daemon after `parla import`) starts searching at once; a failure only
        defers that. A process that only read leaves any catching up to the next search."""
        try:
            self._watch.check()  # files replaced under the store: nothing of it is written anywhere
            if self._wrote:
                transaction(db, "BEGIN", self._vector_file.refresh, threading.Event())
        except (StoreError, sqlite3.Error) as e:
            log.warning("could not bring the vector index of %s up to date: %s", self.path, e)
        finally:
            if self._vectors is not None:
                self._vectors.close()
            self._watch.close(db)

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
        job = asyncio.get_running_loop().run_in_executor(
            self._thread, self._transaction, self._db, begin, work, abandoned
        )
        try:
            return await job
        except asyncio.CancelledError:
            abandoned.set()
            raise
        except sqlite3.Error as e:
            raise store_error(self.path, e, doing) from e

    def _transaction(
        self, db: sqlite3.Connection, begin: str, work: Callable[[sqlite3.Connection], T], abandoned: threading.Event
    ) -> T:
        self._watch.check()
        return transaction(db, begin, work, abandoned)

    def _close_opened(self, opening: Future[sqlite3.Connection]) -> None:
        if opening.exception() is None:
            self._watch.close(opening.result())

    async def _write(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """One write transaction; BEGIN IMMEDIATE takes the file's write lock up front so a
        concurrent writer in another process waits (busy_timeout) instead of failing late."""
        self._wrote = True
        return await self._run("BEGIN IMMEDIATE", work, "write to")

    async def _read(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """A consistent snapshot for reads of several statements."""
        return await self._run("BEGIN", work, "read")

    async def _read_aside(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """A read on a second connection in a thread of its own, opened by the first such read,
        so it runs while the first connection does other work (recall's word search beside its
        vector search): SQLite leaves the interpreter's lock while a statement runs, and WAL lets
        readers work beside each other and beside a writer."""
        if self._thread is None or self._db is None:
            raise StoreError("the store is not open")
        if self._aside is None:
            self._aside = _Aside(self.path)
        try:
            return await self._aside.read(work)
        except sqlite3.Error as e:
            raise store_error(self.path, e, "read") from e


class _Aside:
    """A second connection to a store the first one opened (and migrated), with its own thread
    and its own watch on the files, for reads that may run beside the first's. Read-only (query_only)
    but for the word search's figures, which it writes back only when that needs no wait."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="parla-sqlite-aside")
        self._watch = FileWatch(path)  # touched only in this thread
        self._db: sqlite3.Connection | None = None

    async def read(self, work: Callable[[sqlite3.Connection], T]) -> T:
        abandoned = threading.Event()
        job = asyncio.get_running_loop().run_in_executor(self._thread, self._transaction, work, abandoned)
        try:
            return await job
        except asyncio.CancelledError:
            abandoned.set()
            raise

    def _transaction(self, work: Callable[[sqlite3.Connection], T], abandoned: threading.Event) -> T:
        if self._db is None:
            # mode=rw: a file deleted meanwhile is not made anew (the first connection finds it gone)
            db = sqlite3.connect(self.path.resolve().as_uri() + "?mode=rw", isolation_level=None, uri=True)
            try:
                db.row_factory = sqlite3.Row
                # the word search writes back the figures it found (sqlite_word_bounds), as the
                # first connection writes: no sync at each commit, what it replaces overwritten
                for pragma in (
                    f"busy_timeout={BUSY_SLICE_MS}",
                    "query_only=ON",
                    "synchronous=NORMAL",
                    "secure_delete=ON",
                ):
                    db.execute(f"PRAGMA {pragma}")
                self._watch.opened()
            except BaseException:
                db.close()
                raise
            self._db = db
        self._watch.check()
        return transaction(self._db, "BEGIN", work, abandoned)

    async def close(self) -> None:
        closing = self._thread.submit(self._close)  # after every read already queued
        self._thread.shutdown(wait=False)
        await asyncio.shield(asyncio.wrap_future(closing))

    def _close(self) -> None:
        if self._db is not None:
            self._watch.close(self._db)
            self._db = None


# -- run in the connection's thread ------------------------------------------------------------


def transaction(
    db: sqlite3.Connection, begin: str, work: Callable[[sqlite3.Connection], T], abandoned: threading.Event
) -> T:
    """BEGIN, the work, COMMIT; ROLLBACK on any failure, and when the caller gave up while BEGIN
    waited (nothing it asked for is then done). The connection is outside a transaction after."""
    _begin(db, begin, abandoned)
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


def _begin(db: sqlite3.Connection, begin: str, abandoned: threading.Event) -> None:
    deadline = time.monotonic() + BUSY_WAIT_S
    while True:
        try:
            db.execute(begin)
            return
        except sqlite3.OperationalError as e:
            if getattr(e, "sqlite_errorcode", None) != sqlite3.SQLITE_BUSY or time.monotonic() > deadline:
                raise
            if abandoned.is_set():
                raise asyncio.CancelledError from e
