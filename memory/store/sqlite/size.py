"""What takes the SQLite store's bytes (`parla stats`): its file and the vector index files beside
it, and inside the file the turns, their word index, the windows of what was said, summaries and
facts, and the vectors within those rows."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from pydantic import BaseModel

from .rows import VECTOR_BYTES
from .vectors import vector_count

# dbstat's table and index names, by what they hold
_PARTS = {
    "turns": ("turns", "sqlite_autoindex_turns_", "turns_by_importance"),
    "turn_words": ("turn_words",),
    "windows": ("turn_windows", "sqlite_autoindex_turn_windows_", "window_words"),
    "summaries_and_facts": ("summaries", "facts", "sqlite_autoindex_summaries_", "sqlite_autoindex_facts_"),
}


class StoreSize(BaseModel):
    file: int
    index_files: int  # sqlite_vector_file's, beside the store
    turns: int
    bytes_per_1000_turns: int | None
    # inside the file, when this SQLite reports its pages (the dbstat table); else None
    parts: dict[str, int] | None
    vectors: int  # the vectors within those rows (half precision)


def store_size(path: Path) -> StoreSize:
    """Read-only: opens the file itself, so it can run beside the daemon."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        turns = int(db.execute("SELECT count(*) FROM turns").fetchone()[0])
        dim = db.execute("SELECT value FROM meta WHERE key = 'embedding_dim'").fetchone()
        vectors = vector_count(db) * int(dim[0]) * VECTOR_BYTES if dim else 0
        try:
            pages = dict(db.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name").fetchall())
        except sqlite3.OperationalError:  # built without SQLITE_ENABLE_DBSTAT_VTAB
            parts = None
        else:
            parts = {part: sum(v for k, v in pages.items() if k.startswith(names)) for part, names in _PARTS.items()}
            parts["other"] = sum(pages.values()) - sum(parts.values())
    finally:
        db.close()
    # the file as it stands plus what its write-ahead log still holds
    file = sum(p.stat().st_size for p in (path, path.with_name(path.name + "-wal")) if p.exists())
    index = [path.with_name(path.name + suffix) for suffix in ("-vectors", "-vectors.i8")]
    index_files = sum(p.stat().st_size for p in index if p.exists())
    per_1000 = round((file + index_files) * 1000 / turns) if turns else None
    return StoreSize(
        file=file, index_files=index_files, turns=turns, bytes_per_1000_turns=per_1000, parts=parts, vectors=vectors
    )
