"""The SQLite store's vector index: a file beside the store (`<store>-vectors`) that holds, for
every embedded text, its chat's number and the signs of its vector (one bit a dimension: 32
bytes at 256 dims, 96 at 768), appended chat by chat.

A search reads the file in chunks (page cache, not the daemon's heap), ranks chats by the
Hamming distance of their best text, and decides among the best few dozen chats with their exact
float vectors read from the store, so the answer is the exact search's whenever the true best
chats are among those candidates (measured by `python -m bench.scale`).

The file follows the store: its header records the store's generation it reflects. Opening the
store reads nothing; a search that finds the store newer replaces only the changed chats' rows
(marks the old ones dead, zeroed, and appends the new), under an exclusive lock on the file, so
another process (`parla import` beside the daemon) may write the store and update the file too.
The header is written last: a process killed mid-update leaves the old header, and the next
search redoes the update. A missing or foreign file (another store, another embedder, a
re-embedding) is rebuilt into a temporary file renamed over it; so is a file whose dead rows
reach a third.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from parla.memory.store import TextRef
from parla.memory.store.sqlite_vectors import vector_rows

_MAGIC = b"PARLAVX1"
# magic, dimensions, store id, rebuilt generation, generation, rows, dead rows
_HEADER = struct.Struct("<8sI32sqqqq")
_HEADER_SIZE = 128
_DEAD = 0  # chat numbers start at 1
_CHUNK_ROWS = 32768  # rows read at once: the heap holds one chunk, not the file
# Chats decided by their exact vectors: enough that the exact search's best chats are among them
# (top-10 agreement 1.0 on bench.scale's corpus with 256- and 768-dim embedders).
_CANDIDATES_MIN = 100
_CANDIDATES_PER_WANTED = 5


@dataclass(frozen=True)
class _Header:
    dim: int
    store_id: str
    rebuilt: int
    generation: int
    rows: int = 0
    dead: int = 0

    def pack(self) -> bytes:
        raw = _HEADER.pack(
            _MAGIC, self.dim, self.store_id.encode(), self.rebuilt, self.generation, self.rows, self.dead
        )
        return raw.ljust(_HEADER_SIZE, b"\0")

    @classmethod
    def unpack(cls, raw: bytes) -> _Header | None:
        if len(raw) < _HEADER.size:
            return None
        magic, dim, store_id, rebuilt, generation, rows, dead = _HEADER.unpack_from(raw)
        if magic != _MAGIC:
            return None
        return cls(dim, store_id.rstrip(b"\0").decode(), rebuilt, generation, rows, dead)


def _record(dim: int) -> np.dtype:
    return np.dtype([("chat", "<i8"), ("bits", "<u8", ((dim + 63) // 64,))])


def sign_bits(vectors: np.ndarray) -> np.ndarray:
    """Each row's signs packed into 64-bit words (rows x ceil(dim / 64))."""
    vectors = np.atleast_2d(vectors)
    words = (vectors.shape[1] + 63) // 64
    packed = np.packbits(vectors > 0, axis=1, bitorder="little")
    padded = np.zeros((len(vectors), words * 8), dtype=np.uint8)
    padded[:, : packed.shape[1]] = packed
    return padded.view("<u8")


def store_state(db: sqlite3.Connection) -> _Header | None:
    """What the file must reflect, or None while the store has no vectors."""
    meta = dict(
        db.execute(
            "SELECT key, value FROM meta WHERE key IN ('embedding_dim', 'store_id', 'rebuilt_generation', 'generation')"
        ).fetchall()
    )
    if "embedding_dim" not in meta:
        return None
    return _Header(
        int(meta["embedding_dim"]), meta["store_id"], int(meta["rebuilt_generation"]), int(meta["generation"])
    )


class VectorFile:
    """The index file of one store, used only in the store connection's thread."""

    def __init__(self, store_path: Path) -> None:
        self.path = store_path.with_name(store_path.name + "-vectors")
        self._fd: int | None = None

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    @contextmanager
    def ready(self, db: sqlite3.Connection) -> Iterator[_Header | None]:
        """The file brought up to the store's snapshot and share-locked while the block runs: None
        while the store has no vectors. Enter it before any other read of the transaction: the
        file's header is read before the store's snapshot is taken."""
        try:
            yield self._ready(db)
        finally:
            if self._fd is not None:
                fcntl.flock(self._fd, fcntl.LOCK_UN)

    def best_per_chat(
        self, db: sqlite3.Connection, header: _Header, query: np.ndarray, chat_count: int, texts_per_chat: int
    ) -> list[tuple[str, list[tuple[TextRef, float]]]]:
        """The `chat_count` chats with the most similar texts, best first, each with its
        `texts_per_chat` most similar texts (inside `ready`)."""
        if chat_count <= 0:
            return []
        wanted = max(_CANDIDATES_MIN, _CANDIDATES_PER_WANTED * chat_count)
        candidates = self._nearest_chats(header, sign_bits(query)[0], wanted)
        return _exact(db, candidates, np.asarray(query, dtype=np.float32), chat_count, texts_per_chat)

    # -- reading ---------------------------------------------------------------------------

    def _nearest_chats(self, header: _Header, query_bits: np.ndarray, count: int) -> list[int]:
        """The numbers of the `count` chats whose best text is nearest by Hamming distance."""
        assert self._fd is not None
        chats, distances = [], []
        for chunk in _chunks(self._fd, header):
            live = chunk[chunk["chat"] != _DEAD]
            chats.append(live["chat"])
            distances.append(np.bitwise_count(live["bits"] ^ query_bits).sum(axis=1, dtype=np.int32))
        chat = np.concatenate(chats) if chats else np.zeros(0, dtype=np.int64)
        if not len(chat):
            return []
        best = np.full(int(chat.max()) + 1, np.iinfo(np.int32).max, dtype=np.int32)
        np.minimum.at(best, chat, np.concatenate(distances))
        present = np.flatnonzero(best != np.iinfo(np.int32).max)
        nearest = present[np.argsort(best[present], kind="stable")[:count]]
        return [int(n) for n in nearest]

    # -- keeping up with the store ---------------------------------------------------------

    def _ready(self, db: sqlite3.Connection) -> _Header | None:
        """The file, shared-locked, reflecting the store's snapshot (or newer)."""
        fd = self._locked(fcntl.LOCK_SH)
        seen = _Header.unpack(os.pread(fd, _HEADER_SIZE, 0))
        state = store_state(db)  # the transaction's snapshot starts here, after the header was read
        if state is None:
            return None
        if seen is not None and replace(seen, rows=0, dead=0) == state:
            return seen
        fcntl.flock(fd, fcntl.LOCK_UN)
        fd = self._locked(fcntl.LOCK_EX)
        header = _Header.unpack(os.pread(fd, _HEADER_SIZE, 0))
        # A header read before the snapshot and ahead of it means the store went back (a file
        # restored from a backup); ahead now but not then, another process updated it meanwhile.
        went_back = seen is not None and seen.generation > state.generation and header == seen
        if (
            header is None
            or went_back
            or (header.dim, header.store_id, header.rebuilt)
            != (
                state.dim,
                state.store_id,
                state.rebuilt,
            )
        ):
            header = self._rebuild(db, state)
        elif header.generation < state.generation:
            header = self._catch_up(fd, db, header, state)
        if header.dead * 3 > header.rows > 1024:
            header = self._rewrite(self._live_rows(header), state, header.generation)
        self._locked(fcntl.LOCK_SH)
        return header

    def _locked(self, how: int) -> int:
        """The file at `path` (reopened when another process renamed a new one over it), locked."""
        while True:
            if self._fd is None:
                self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(self._fd, how)
            try:
                same = os.stat(self.path).st_ino == os.fstat(self._fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                return self._fd
            self.close()

    def _catch_up(self, fd: int, db: sqlite3.Connection, header: _Header, state: _Header) -> _Header:
        changed = dict(
            db.execute(
                "SELECT n.number, n.chat_id FROM vector_changes c JOIN vector_chats n ON n.chat_id = c.chat_id "
                "WHERE c.generation > ?",
                (header.generation,),
            ).fetchall()
        )
        record = _record(header.dim)
        dead = header.dead
        numbers = np.fromiter(changed, dtype=np.int64)
        for start, chunk in _positioned_chunks(fd, header):
            for row in np.flatnonzero(np.isin(chunk["chat"], numbers)).tolist():
                os.pwrite(fd, bytes(record.itemsize), _HEADER_SIZE + (start + row) * record.itemsize)
                dead += 1
        rows = header.rows
        for batch in _batches(_numbered_rows(db, changed)):
            os.pwrite(fd, _encode(batch, header.dim).tobytes(), _HEADER_SIZE + rows * record.itemsize)
            rows += len(batch)
        updated = replace(state, rows=rows, dead=dead)
        os.pwrite(fd, updated.pack(), 0)
        return updated

    def _live_rows(self, header: _Header) -> Iterator[np.ndarray]:
        assert self._fd is not None
        for chunk in _chunks(self._fd, header):
            yield chunk[chunk["chat"] != _DEAD]

    def _rebuild(self, db: sqlite3.Connection, state: _Header) -> _Header:
        numbers = dict(db.execute("SELECT chat_id, number FROM vector_chats").fetchall())
        return self._rewrite(
            (_encode(batch, state.dim) for batch in _batches(_all_rows(db, numbers))), state, state.generation
        )

    def _rewrite(self, chunks: Iterator[np.ndarray], state: _Header, generation: int) -> _Header:
        """Write a new file from `chunks` and rename it over the old one (held exclusively)."""
        for stale in self.path.parent.glob(self.path.name + ".*.tmp"):  # left by a killed rebuild
            stale.unlink(missing_ok=True)
        temp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        fd = os.open(temp, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            rows = 0
            for chunk in chunks:
                os.pwrite(fd, chunk.tobytes(), _HEADER_SIZE + rows * chunk.dtype.itemsize)
                rows += len(chunk)
            header = replace(state, generation=generation, rows=rows, dead=0)
            os.pwrite(fd, header.pack(), 0)
            os.replace(temp, self.path)
        except BaseException:
            os.close(fd)
            temp.unlink(missing_ok=True)
            raise
        self.close()  # unlocks the old file: processes waiting on it see the rename and reopen
        self._fd = fd
        fcntl.flock(fd, fcntl.LOCK_EX)
        return header


def _encode(rows: list[tuple[int, bytes]], dim: int) -> np.ndarray:
    out = np.zeros(len(rows), dtype=_record(dim))
    out["chat"] = [number for number, _ in rows]
    out["bits"] = sign_bits(np.frombuffer(b"".join(blob for _, blob in rows), dtype=np.float32).reshape(len(rows), dim))
    return out


def _batches(rows: Iterator[tuple[int, bytes]], size: int = 4096) -> Iterator[list[tuple[int, bytes]]]:
    batch: list[tuple[int, bytes]] = []
    for row in rows:
        batch.append(row)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def _numbered_rows(db: sqlite3.Connection, chats: dict[int, str]) -> Iterator[tuple[int, bytes]]:
    number_of = {chat_id: number for number, chat_id in chats.items()}
    for ref, blob in vector_rows(db, list(number_of)) if number_of else []:
        yield number_of[ref.chat_id], blob


def _all_rows(db: sqlite3.Connection, numbers: dict[str, int]) -> Iterator[tuple[int, bytes]]:
    """Every vector with its chat's number, streamed (a full read happens only at a rebuild)."""
    cursor = db.execute(
        "SELECT id, summary_embedding FROM chats WHERE summary_embedding IS NOT NULL "
        "UNION ALL SELECT chat_id, embedding FROM summaries "
        "UNION ALL SELECT chat_id, embedding FROM facts WHERE embedding IS NOT NULL "
        "UNION ALL SELECT chat_id, embedding FROM turn_windows"
    )
    while rows := cursor.fetchmany(4096):
        for chat_id, blob in rows:
            yield numbers[chat_id], blob


def _positioned_chunks(fd: int, header: _Header) -> Iterator[tuple[int, np.ndarray]]:
    record = _record(header.dim)
    for start in range(0, header.rows, _CHUNK_ROWS):
        count = min(_CHUNK_ROWS, header.rows - start)
        raw = os.pread(fd, count * record.itemsize, _HEADER_SIZE + start * record.itemsize)
        yield start, np.frombuffer(raw, dtype=record, count=len(raw) // record.itemsize)


def _chunks(fd: int, header: _Header) -> Iterator[np.ndarray]:
    for _, chunk in _positioned_chunks(fd, header):
        yield chunk


def _exact(
    db: sqlite3.Connection, numbers: list[int], query: np.ndarray, chat_count: int, texts_per_chat: int
) -> list[tuple[str, list[tuple[TextRef, float]]]]:
    """The candidates ranked by their exact vectors: each chat by its most similar text."""
    if not numbers:
        return []
    marks = ",".join("?" * len(numbers))
    chat_ids = [r[0] for r in db.execute(f"SELECT chat_id FROM vector_chats WHERE number IN ({marks})", numbers)]
    rows = vector_rows(db, chat_ids)
    if not rows:
        return []
    sims = np.frombuffer(b"".join(blob for _, blob in rows), dtype=np.float32).reshape(len(rows), -1) @ query
    by_chat: dict[str, list[tuple[TextRef, float]]] = {}
    for (ref, _), similarity in zip(rows, sims.tolist(), strict=True):
        by_chat.setdefault(ref.chat_id, []).append((ref, similarity))
    ranked = [sorted(texts, key=lambda t: -t[1])[:texts_per_chat] for texts in by_chat.values()]
    ranked.sort(key=lambda texts: -texts[0][1])
    return [(texts[0][0].chat_id, texts) for texts in ranked[:chat_count]]
