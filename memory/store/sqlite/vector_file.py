"""The SQLite store's vector index: two files beside the store that hold, for every embedded
text, row by row and appended chat by chat,
- `<store>-vectors`: its chat's number and the signs of its vector (one bit a dimension: 32
  bytes at 256 dims, 96 at 768), scanned whole by every search;
- `<store>-vectors.i8`: its vector in 8 bits a dimension with its scale, read only for the rows of
  the chats the scan found nearest.

A search reads the sign file in chunks (page cache, not the daemon's heap) and ranks chats by the
Hamming distance of their best text; the best few hundred chats (a share of them in a big
store: `candidate_counts`) are ranked again with their 8-bit rows, and the best few of those are
decided with their exact float vectors read from the store. The answer is the exact search's
whenever the true best chats survive both stages (top-10 agreement measured by
`python -m bench.scale`; where they were lost, by `python -m bench.scale_misses`).

The files follow the store: the sign file's header records the store's generation they reflect.
Opening the store reads nothing; a search that finds the store newer replaces only the changed
chats' rows (marks the old ones dead, zeroed in both files, and appends the new), under an
exclusive lock on the sign file, so another process (`parla import` beside the daemon) may write
the store and update the files too. The header is written last: a process killed mid-update
leaves the old header, and the next search redoes the update. Missing or foreign files (another
store, another embedder, a re-embedding, a pair that does not match) are rebuilt into temporary
files renamed over them (the 8-bit file first); so are files whose dead rows reach a third.
"""

from __future__ import annotations

import fcntl
import itertools
import os
import sqlite3
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ...config import MemoryConfig
from ...errors import StoreError
from ..checks import text_ref
from ..protocol import TextRef
from .rows import vector_matrix
from .vectors import raw_vector_rows, vector_blobs

_MAGIC = b"PARLAVX2"
_CODES_MAGIC = b"PARLAV8\0"
# magic, dimensions, store id, rebuilt generation, generation, rows, dead rows, pair
_HEADER = struct.Struct("<8sI32sqqqqq")
_HEADER_SIZE = 128
_CODES_HEADER = struct.Struct("<8sq")  # magic, pair: the sign file's it was written with
_DEAD = 0  # chat numbers start at 1
_CHUNK_ROWS = 32768  # rows read at once: the heap holds one chunk, not the file
# Chats shortlisted per chat a search asks for, when that is more than the settings' shortlist.
_CANDIDATES_PER_WANTED = 5
_CODES_AT_ONCE = 4096  # 8-bit rows read and made floats at once, about


@dataclass(frozen=True)
class _Header:
    dim: int
    store_id: str
    rebuilt: int
    generation: int
    rows: int = 0
    dead: int = 0
    pair: int = 0

    def pack(self) -> bytes:
        raw = _HEADER.pack(
            _MAGIC, self.dim, self.store_id.encode(), self.rebuilt, self.generation, self.rows, self.dead, self.pair
        )
        return raw.ljust(_HEADER_SIZE, b"\0")

    @classmethod
    def unpack(cls, raw: bytes) -> _Header | None:
        if len(raw) < _HEADER.size:
            return None
        magic, dim, store_id, rebuilt, generation, rows, dead, pair = _HEADER.unpack_from(raw)
        if magic != _MAGIC:
            return None
        return cls(dim, store_id.rstrip(b"\0").decode(), rebuilt, generation, rows, dead, pair)

    def same_as(self, state: _Header) -> bool:
        return replace(self, rows=0, dead=0, pair=0) == state


def _record(dim: int) -> np.dtype:
    return np.dtype([("chat", "<i8"), ("bits", "<u8", ((dim + 63) // 64,))])


def _code(dim: int) -> np.dtype:
    return np.dtype([("scale", "<f4"), ("v", "i1", (dim,))])


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
    """The index files of one store, used only in the store connection's thread."""

    def __init__(self, store_path: Path, config: MemoryConfig) -> None:
        self.config = config
        self.path = store_path.with_name(store_path.name + "-vectors")
        self.codes_path = self.path.with_name(self.path.name + ".i8")
        self._fd: int | None = None
        self._codes_fd: int | None = None

    def close(self) -> None:
        for fd in (self._fd, self._codes_fd):
            if fd is not None:
                os.close(fd)
        self._fd = self._codes_fd = None

    @contextmanager
    def ready(self, db: sqlite3.Connection) -> Iterator[_Header | None]:
        """The files brought up to the store's snapshot and share-locked while the block runs:
        None while the store has no vectors. Enter it before any other read of the transaction:
        the header is read before the store's snapshot is taken."""
        try:
            try:
                header = self._ready(db)
            except OSError as e:  # a read-only folder, a full disk
                raise StoreError(
                    f"cannot keep the vector index {self.path} beside the store: {e.strerror}: "
                    "make the store's folder writable for you, or free some space"
                ) from e
            yield header
        finally:
            if self._fd is not None:
                fcntl.flock(self._fd, fcntl.LOCK_UN)

    def refresh(self, db: sqlite3.Connection) -> None:
        with self.ready(db):
            pass

    def best_per_chat(
        self, db: sqlite3.Connection, header: _Header, query: np.ndarray, chat_count: int, texts_per_chat: int
    ) -> list[tuple[str, list[tuple[TextRef, float]]]]:
        """The `chat_count` chats with the most similar texts, best first, each with its
        `texts_per_chat` most similar texts (inside `ready`)."""
        if chat_count <= 0:
            return []
        query = np.asarray(query, dtype=np.float32)
        chats, rows, finalists = self._nearest_chats(header, sign_bits(query)[0], chat_count)
        return _exact(db, self._by_codes(header, chats, rows, query, finalists), query, chat_count, texts_per_chat)

    # -- reading ---------------------------------------------------------------------------

    def _nearest_chats(
        self, header: _Header, query_bits: np.ndarray, chat_count: int
    ) -> tuple[np.ndarray, np.ndarray, int]:
        """The shortlist for a search of `chat_count` chats: the chats whose best text is nearest
        by Hamming distance, their rows' chat numbers and row numbers, and how many of them to
        keep as finalists (both grow with the chats in the file: `candidate_counts`)."""
        assert self._fd is not None
        # each record read as 64-bit words (its chat number, then its signs), so one XOR over the
        # chunk does it (the chat number XOR 0 stays), and a dead row's distance goes to chat 0
        probe = np.concatenate((np.zeros(1, dtype="<u8"), query_bits.astype("<u8")))
        chats, distances = [], []
        for _, chunk in _chunks(self._fd, header):
            words = chunk.view("<u8").reshape(len(chunk), len(probe))
            differing = np.bitwise_count(words ^ probe)
            distance = differing[:, 1].astype(np.int32)
            for column in range(2, len(probe)):  # faster than a sum along rows this short
                distance += differing[:, column]
            chats.append(chunk["chat"])
            distances.append(distance)
        chat = np.concatenate(chats) if chats else np.zeros(0, dtype=np.int64)
        if not len(chat):
            return chat, chat, 0
        far = np.iinfo(np.int32).max
        best = np.full(int(chat.max()) + 1, far, dtype=np.int32)
        np.minimum.at(best, chat, np.concatenate(distances))
        best[_DEAD] = far
        present = np.flatnonzero(best != far)
        shortlist, finalists = candidate_counts(self.config, chat_count, len(present))
        nearest = np.zeros(len(best), dtype=bool)
        nearest[present[np.argsort(best[present], kind="stable")[:shortlist]]] = True
        rows = np.flatnonzero(nearest[chat])
        return chat[rows], rows, finalists

    def _by_codes(
        self, header: _Header, chats: np.ndarray, rows: np.ndarray, query: np.ndarray, count: int
    ) -> list[int]:
        """The `count` chats among `chats` whose best row is most similar by the 8-bit vectors:
        each chat's rows are contiguous, so they are read run by run."""
        assert self._codes_fd is not None
        if not len(rows):
            return []
        code = _code(header.dim)
        order = np.argsort(rows, kind="stable")
        rows, chats = rows[order], chats[order]
        breaks = np.flatnonzero(np.diff(rows) != 1) + 1
        starts, ends = np.concatenate(([0], breaks)).tolist(), np.concatenate((breaks, [len(rows)])).tolist()
        # runs read _CODES_AT_ONCE rows or so at a time (a shortlist grown with the store holds tens
        # of thousands: 40 MB at 768 dims, four times that as floats), each batch's bytes joined
        # and read as one array: concatenating one small array per run costs more than the reads
        # (numpy checks the record's fields for each)
        batch = (np.asarray(ends) - 1) // _CODES_AT_ONCE
        parts = []
        for _, runs in itertools.groupby(
            zip(starts, ends, rows[starts].tolist(), batch.tolist(), strict=True), key=lambda run: run[3]
        ):
            raw = b"".join(
                os.pread(self._codes_fd, (end - start) * code.itemsize, _CODES_HEADER.size + first * code.itemsize)
                for start, end, first, _ in runs
            )
            codes = np.frombuffer(raw, dtype=code)
            parts.append((codes["v"].astype(np.float32) @ query) * codes["scale"])
        sims = np.concatenate(parts)
        numbers, of_row = np.unique(chats, return_inverse=True)
        best = np.full(len(numbers), -np.inf, dtype=np.float32)
        np.maximum.at(best, of_row, sims)
        return [int(n) for n in numbers[np.argsort(-best, kind="stable")[:count]]]

    # -- keeping up with the store ---------------------------------------------------------

    def _ready(self, db: sqlite3.Connection) -> _Header | None:
        """The files, shared-locked, reflecting the store's snapshot (or newer)."""
        if self._fd is None and not self.path.exists() and store_state(db) is None:
            return None  # no vectors yet: no files either
        fd = self._locked(fcntl.LOCK_SH)
        seen = _Header.unpack(os.pread(fd, _HEADER_SIZE, 0))
        state = store_state(db)  # the transaction's snapshot starts here, after the header was read
        if state is None:
            return None
        if seen is not None and seen.same_as(state) and self._paired(seen):
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
            or not self._paired(header)
            or (header.dim, header.store_id, header.rebuilt) != (state.dim, state.store_id, state.rebuilt)
        ):
            header = self._rebuild(db, state)
        elif header.generation < state.generation:
            header = self._catch_up(db, header, state)
        if header.dead * 3 > header.rows > 1024:
            header = self._rewrite(self._live_rows(header), state, header.generation)
        self._locked(fcntl.LOCK_SH)
        return header

    def _paired(self, header: _Header) -> bool:
        assert self._codes_fd is not None
        raw = os.pread(self._codes_fd, _CODES_HEADER.size, 0)
        return len(raw) == _CODES_HEADER.size and _CODES_HEADER.unpack(raw) == (_CODES_MAGIC, header.pair)

    def _locked(self, how: int) -> int:
        """The sign file at `path` (both files reopened when another process renamed new ones
        over them), locked."""
        while True:
            if self._fd is None:
                self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(self._fd, how)
            try:
                same = os.stat(self.path).st_ino == os.fstat(self._fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                if self._codes_fd is None:
                    self._codes_fd = os.open(self.codes_path, os.O_RDWR | os.O_CREAT, 0o600)
                return self._fd
            self.close()

    def _catch_up(self, db: sqlite3.Connection, header: _Header, state: _Header) -> _Header:
        assert self._fd is not None and self._codes_fd is not None
        changed = dict(
            db.execute(
                "SELECT n.chat_id, n.number FROM vector_changes c JOIN vector_chats n ON n.chat_id = c.chat_id "
                "WHERE c.generation > ?",
                (header.generation,),
            ).fetchall()
        )
        record, code = _record(header.dim), _code(header.dim)
        dead = header.dead
        numbers = np.fromiter(changed.values(), dtype=np.int64)
        for start, chunk in _chunks(self._fd, header):
            for row in (np.flatnonzero(np.isin(chunk["chat"], numbers)) + start).tolist():
                os.pwrite(self._fd, bytes(record.itemsize), _HEADER_SIZE + row * record.itemsize)
                os.pwrite(self._codes_fd, bytes(code.itemsize), _CODES_HEADER.size + row * code.itemsize)
                dead += 1
        rows = header.rows
        for records, codes in _encoded(_chat_by_chat(db, list(changed)), changed, header.dim):
            os.pwrite(self._codes_fd, codes.tobytes(), _CODES_HEADER.size + rows * code.itemsize)
            os.pwrite(self._fd, records.tobytes(), _HEADER_SIZE + rows * record.itemsize)
            rows += len(records)
        updated = replace(state, rows=rows, dead=dead, pair=header.pair)
        os.pwrite(self._fd, updated.pack(), 0)
        return updated

    def _live_rows(self, header: _Header) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        assert self._fd is not None and self._codes_fd is not None
        code = _code(header.dim)
        for start, chunk in _chunks(self._fd, header):
            raw = os.pread(self._codes_fd, len(chunk) * code.itemsize, _CODES_HEADER.size + start * code.itemsize)
            live = chunk["chat"] != _DEAD
            yield chunk[live], np.frombuffer(raw, dtype=code, count=len(chunk))[live]

    def _rebuild(self, db: sqlite3.Connection, state: _Header) -> _Header:
        numbers = dict(db.execute("SELECT chat_id, number FROM vector_chats").fetchall())
        return self._rewrite(_encoded(_chat_by_chat(db, list(numbers)), numbers, state.dim), state, state.generation)

    def _rewrite(self, chunks: Iterator[tuple[np.ndarray, np.ndarray]], state: _Header, generation: int) -> _Header:
        """Write new files from `chunks` and rename them over the old ones (held exclusively):
        the 8-bit file first, so a sign file never names a pair that is not there."""
        for stale in self.path.parent.glob(self.path.name + ".*.tmp"):  # left by a killed rebuild
            stale.unlink(missing_ok=True)
        temp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        codes_temp = self.path.with_name(f"{self.codes_path.name}.{os.getpid()}.tmp")
        fd = os.open(temp, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        codes_fd = os.open(codes_temp, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            pair = int.from_bytes(os.urandom(8), "little", signed=True)
            os.pwrite(codes_fd, _CODES_HEADER.pack(_CODES_MAGIC, pair), 0)
            rows = 0
            for records, codes in chunks:
                os.pwrite(fd, records.tobytes(), _HEADER_SIZE + rows * records.dtype.itemsize)
                os.pwrite(codes_fd, codes.tobytes(), _CODES_HEADER.size + rows * codes.dtype.itemsize)
                rows += len(records)
            header = replace(state, generation=generation, rows=rows, dead=0, pair=pair)
            os.pwrite(fd, header.pack(), 0)
            os.replace(codes_temp, self.codes_path)
            os.replace(temp, self.path)
        except BaseException:
            for opened, path in ((fd, temp), (codes_fd, codes_temp)):
                os.close(opened)
                path.unlink(missing_ok=True)
            raise
        self.close()  # unlocks the old file: processes waiting on it see the rename and reopen
        self._fd, self._codes_fd = fd, codes_fd
        fcntl.flock(fd, fcntl.LOCK_EX)
        return header


def candidate_counts(config: MemoryConfig, chat_count: int, chats: int) -> tuple[int, int]:
    """For a search of `chat_count` chats in a file of `chats` chats: how many chats its sign
    bits shortlist, and how many of those its 8-bit rows keep for the exact ranking. Both grow
    with the file: a bigger store has more chats alike, and the places of the exact top 10 by sign
    bits and by 8 bits grow with them (`bench.scale_misses` on `bench.scale`'s corpus: by sign
    bits 3% of the chats at 5,000 and 4.2% at 20,000; by 8 bits 16 and 29 finalists)."""
    shortlist = max(
        config.index_shortlist_min, round(config.index_shortlist_share * chats), _CANDIDATES_PER_WANTED * chat_count
    )
    extra = max(config.index_finalists_extra, round(config.index_finalists_share * shortlist))
    return shortlist, chat_count + extra


def _encoded(
    rows: Iterator[tuple[str, bytes]], numbers: dict[str, int], dim: int, size: int = 4096
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The files' rows for `rows` (chat id, stored vector), `size` at a time."""
    while batch := list(itertools.islice(rows, size)):
        vectors = vector_matrix([blob for _, blob in batch]).reshape(len(batch), dim)
        records = np.zeros(len(batch), dtype=_record(dim))
        records["chat"] = [numbers[chat_id] for chat_id, _ in batch]
        records["bits"] = sign_bits(vectors)
        codes = np.zeros(len(batch), dtype=_code(dim))
        scale = np.abs(vectors).max(axis=1) / 127
        codes["scale"] = scale
        codes["v"] = np.round(vectors / np.where(scale == 0, 1, scale)[:, None])
        yield records, codes


def _chat_by_chat(db: sqlite3.Connection, chat_ids: list[str], at_once: int = 256) -> Iterator[tuple[str, bytes]]:
    """The chats' vectors, each chat's together (a search reads a chat's 8-bit rows in one go)."""
    for start in range(0, len(chat_ids), at_once):
        yield from sorted(vector_blobs(db, chat_ids[start : start + at_once]), key=lambda row: row[0])


def _chunks(fd: int, header: _Header) -> Iterator[tuple[int, np.ndarray]]:
    """The sign file's rows, a chunk at a time, with the row number each chunk starts at."""
    record = _record(header.dim)
    for start in range(0, header.rows, _CHUNK_ROWS):
        count = min(_CHUNK_ROWS, header.rows - start)
        raw = os.pread(fd, count * record.itemsize, _HEADER_SIZE + start * record.itemsize)
        yield start, np.frombuffer(raw, dtype=record, count=len(raw) // record.itemsize)


def _exact(
    db: sqlite3.Connection, numbers: list[int], query: np.ndarray, chat_count: int, texts_per_chat: int
) -> list[tuple[str, list[tuple[TextRef, float]]]]:
    """The finalists ranked by their exact vectors: each chat by its most similar text."""
    if not numbers:
        return []
    marks = ",".join("?" * len(numbers))
    chat_ids = [r[0] for r in db.execute(f"SELECT chat_id FROM vector_chats WHERE number IN ({marks})", numbers)]
    rows = raw_vector_rows(db, chat_ids)
    if not rows:
        return []
    sims = vector_matrix([row[4] for row in rows]) @ query
    # each chat's rows by similarity, ties in row order; the chats by their best, ties in the
    # order they first appear (sorted in numpy: a key function a row costs more than the rest)
    ids = [row[0] for row in rows]
    number = {chat_id: n for n, chat_id in enumerate(dict.fromkeys(ids))}
    chat = np.array([number[chat_id] for chat_id in ids])
    order = np.lexsort((np.arange(len(rows)), -sims, chat))
    starts = np.flatnonzero(np.diff(chat[order], prepend=-1))
    ends = np.append(starts[1:], len(order))
    best = np.lexsort((chat[order[starts]], -sims[order[starts]]))[:chat_count]
    return [
        (
            rows[order[starts[g]]][0],
            [
                (text_ref(*rows[i][:4]), float(sims[i]))
                for i in order[starts[g] : min(ends[g], starts[g] + texts_per_chat)]
            ],
        )
        for g in best.tolist()
    ]
