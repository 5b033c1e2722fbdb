"""The SQLite file on disk: private to its user, and one clear sentence when it cannot be used.

The file holds every transcript (and the Supabase store's outbox), so it is created 0600 and its
folder 0700; SQLite gives the -wal and -shm files it makes the mode of the database file. A file
of another user there (or such a -wal file beside it, or a folder of theirs) is refused before
SQLite opens it: its owner chose what it holds, and an outbox's queued writes would go out with
this user's credentials.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import stat
from pathlib import Path

from parla.kernel.owners import other_owner

from ...errors import ForeignFile, StoreError

log = logging.getLogger("parla.memory")

_COMPANIONS = ("-wal", "-shm", "-journal", "-vectors", "-vectors.i8")  # the last two: sqlite_vector_file


def _store_files(path: Path) -> list[Path]:
    return [path, *(path.with_name(path.name + suffix) for suffix in _COMPANIONS)]


def _folder_is_the_stores(folder: Path, path: Path) -> bool:
    """A folder tightened only when it is ours and holds nothing but this store (never a home
    folder, /tmp or a folder shared with other files)."""
    info = folder.stat()
    if info.st_uid != os.getuid() or info.st_mode & stat.S_ISVTX:
        return False
    names = {p.name for p in _store_files(path)}
    return all(child.name in names for child in folder.iterdir())


def others_files(path: Path) -> list[int]:
    """The other users the store's file and the files SQLite reads beside it belong to."""
    return [uid for candidate in _store_files(path) if (uid := other_owner(candidate)) is not None]


def refuse_others(path: Path) -> None:
    """Raise ForeignFile when the store's folder, its file or a file SQLite reads beside it belongs
    to another user (root's are the user's: root can change any file anyway)."""
    folder = path.parent
    if (uid := other_owner(folder)) is not None:
        raise ForeignFile(
            f"the SQLite file {path} is not used: its folder {folder} belongs to another user (uid {uid}), who "
            "can put any file there; keep Parla's files in a folder of yours (PARLA_STORE_PATH, "
            "PARLA_SUPABASE_COPY_PATH)"
        )
    for candidate in _store_files(path):
        if (uid := other_owner(candidate)) is not None:
            raise ForeignFile(
                f"the SQLite file {path} is not used: {candidate} belongs to another user (uid {uid}), who chose "
                f"what it holds; move it aside (Parla then starts a new one), or check what it holds and make it "
                f"yours (chown)"
            )


def create_private(path: Path) -> None:
    """Create the store's folder (0700) and file (0600) when missing, after refusing files of
    another user there."""
    refuse_others(path)
    folder = path.parent
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        if not path.exists():
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
    except OSError as e:
        raise StoreError(
            f"cannot create the SQLite store {path}: {e.strerror}: make {folder} writable for you, "
            "or set PARLA_STORE_PATH to a file in a folder of yours"
        ) from e


def tighten(path: Path) -> None:
    """Once the file has opened as the store (so it is Parla's), take away what others may do
    with it, its -wal and -shm files and its own folder, saying so (once: they stay tight)."""
    folder = path.parent
    tightened: list[str] = []
    candidates = [folder] if _folder_is_the_stores(folder, path) else []
    for candidate in [*candidates, *_store_files(path)]:
        try:
            info = candidate.stat()
        except FileNotFoundError:
            continue
        if info.st_mode & 0o077 and info.st_uid == os.getuid():
            try:
                os.chmod(candidate, stat.S_IMODE(info.st_mode) & 0o700)  # a read-only file stays read-only
            except OSError as e:  # a read-only file system: nothing can be written there anyway
                log.warning("could not make %s private: %s", candidate, e.strerror)
                continue
            tightened.append(str(candidate))
    if tightened:
        log.warning("other users could read Parla's store: %s now readable by you alone", ", ".join(tightened))


# What to do about an error, by SQLite's primary result code.
_ADVICE = {
    sqlite3.SQLITE_NOTADB: "move it aside (Parla then starts a new one) or set PARLA_STORE_PATH to Parla's database",
    sqlite3.SQLITE_CORRUPT: "the file is damaged: restore it from a backup, or move it aside",
    sqlite3.SQLITE_READONLY: "make the file, its -wal and -shm files and its folder writable for you",
    sqlite3.SQLITE_CANTOPEN: "make the file and its folder readable and writable for you",
    sqlite3.SQLITE_PERM: "make the file and its folder readable and writable for you",
    sqlite3.SQLITE_BUSY: "another program holds it locked: close it (another Parla?) and try again",
    sqlite3.SQLITE_FULL: "the disk is full: free some space",
}


def store_error(path: Path, e: sqlite3.Error, doing: str) -> StoreError:
    """One sentence: which file, what SQLite said, and what to do."""
    code = getattr(e, "sqlite_errorcode", None)
    advice = _ADVICE.get(code & 0xFF) if code is not None else None
    return StoreError(f"cannot {doing} the SQLite store {path} ({e})" + (f": {advice}" if advice else ""))
