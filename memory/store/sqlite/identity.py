"""Whether the SQLite store's files are still the database the connection opened.

Deleting `parla.db-wal` and `-shm` (or the whole file) while a connection is open splits the store
in two: the open connection goes on writing into the unlinked WAL, which no other process sees,
while other processes start a new WAL at the path. Worse, when the open connection closes, SQLite
takes itself for the last connection (its shared memory is the unlinked one), copies its own WAL
into the database file and deletes the WAL at the path: the other processes' new one, with
everything they wrote. So each operation first checks the files' identities (device, inode)
against those seen at open; once they differ the store refuses every operation, loudly, and its
close holds an open-file-description read lock on the database file meanwhile (Linux), which
makes SQLite see another connection and leave the database and the WAL at the path alone.
"""

from __future__ import annotations

import fcntl
import logging
import os
import sqlite3
import struct
from pathlib import Path

from ...errors import StoreFileReplaced

log = logging.getLogger("parla.memory")

# SQLite's lock bytes in the database file (os_unix.c): a shared lock is a read lock on
# SHARED_SIZE bytes from SHARED_FIRST; closing the last connection needs a write lock there.
_PENDING_BYTE = 0x40000000
_SHARED_FIRST = _PENDING_BYTE + 2
_SHARED_SIZE = 510

Identity = tuple[int, int]


def _identity(path: Path) -> Identity | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (st.st_dev, st.st_ino)


class FileWatch:
    """The identities of the database file and its -wal and -shm files, as the connection opened them."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._files = [path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")]
        self._seen: dict[Path, Identity | None] = {}
        self._fd: int | None = None  # the database file as opened, to lock at close
        self.replaced: str | None = None

    def opened(self) -> None:
        """The connection has opened the database (its WAL and shared memory exist now)."""
        self._fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        self._seen = {p: _identity(p) for p in self._files}

    def check(self) -> None:
        """StoreFileReplaced when a file is no longer the one opened (and from then on)."""
        if self.replaced is None:
            for path in self._files:
                seen, now = self._seen.get(path), _identity(path)
                if seen is None:
                    self._seen[path] = now  # made after the open (a WAL appears with the first read)
                elif now != seen:
                    self._replaced(path)
                    break
        if self.replaced is not None:
            raise StoreFileReplaced(self.replaced)

    def _replaced(self, path: Path) -> None:
        self.replaced = (
            f"{path} was deleted or replaced while Parla ran, so the SQLite store {self.path} this process "
            "opened is no longer the database at that path: Parla refuses to read or write it rather than "
            "write where no one will find it; restart Parla to use the file now there"
        )
        log.error("%s", self.replaced, extra={"event": "store_replaced"})

    def close(self, db: sqlite3.Connection) -> None:
        """Close `db`; when its files were replaced, without letting it touch the database or
        the WAL now at the path."""
        try:
            try:
                self.check()
                db.close()
                return
            except StoreFileReplaced:
                pass
            ofd = getattr(fcntl, "F_OFD_SETLK", None)
            if ofd is not None and self._fd is not None:
                lock = struct.pack("hhxxxxqqixxxx", fcntl.F_RDLCK, os.SEEK_SET, _SHARED_FIRST, _SHARED_SIZE, 0)
                fcntl.fcntl(self._fd, ofd, lock)  # released when the descriptor closes
            db.close()
        finally:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
