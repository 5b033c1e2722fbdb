"""The SQLite store's vector search: every embedded text's vector in one matrix searched with
numpy, kept up to date chat by chat.

A write that changes a chat's vectors replaces only that chat's rows: the old rows are marked
dead and the new ones appended (the matrix grows by doubling), so the first search after a turn
is indexed costs that chat's rows, not a reload of every vector. Dead rows are dropped once they
are a third of the matrix.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from parla.memory.store import TextRef

_DEAD = -1
# Rows looked at first for the best chats; more only when these hold too few chats.
_FIRST_ROWS = 4096


@dataclass
class VectorIndex:
    generation: int
    dim: int
    matrix: np.ndarray  # capacity x dim; rows past `size` are unused
    size: int = 0
    chat_of_row: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    refs: list[TextRef | None] = field(default_factory=list)
    chat_ids: list[str] = field(default_factory=list)
    chat_number: dict[str, int] = field(default_factory=dict)
    rows_of_chat: dict[int, list[int]] = field(default_factory=dict)
    dead: int = 0

    @classmethod
    def build(cls, generation: int, rows: Iterable[tuple[TextRef, bytes]], dim: int) -> VectorIndex:
        index = cls(generation, dim, np.zeros((0, dim), dtype=np.float32))
        index._add(list(rows))
        return index

    def replace_chats(self, chat_ids: Sequence[str], rows: Iterable[tuple[TextRef, bytes]], generation: int) -> None:
        """Drop the rows of `chat_ids` and add `rows` (their current vectors; none for a deleted chat)."""
        for chat_id in chat_ids:
            number = self.chat_number.get(chat_id)
            if number is None:
                continue
            dropped = self.rows_of_chat.pop(number, [])
            self.chat_of_row[dropped] = _DEAD
            for row in dropped:
                self.refs[row] = None
            self.dead += len(dropped)
        self._add(list(rows))
        self.generation = generation
        if self.dead * 3 > self.size:
            self._compact()

    def _add(self, rows: list[tuple[TextRef, bytes]]) -> None:
        if not rows:
            return
        vectors = np.frombuffer(b"".join(blob for _, blob in rows), dtype=np.float32).reshape(len(rows), self.dim)
        need = self.size + len(rows)
        if need > self.matrix.shape[0]:
            capacity = max(need, 2 * self.matrix.shape[0], 64)
            grown = np.zeros((capacity, self.dim), dtype=np.float32)
            grown[: self.size] = self.matrix[: self.size]
            self.matrix = grown
            chats = np.full(capacity, _DEAD, dtype=np.int64)
            chats[: self.size] = self.chat_of_row[: self.size]
            self.chat_of_row = chats
        self.matrix[self.size : need] = vectors
        for offset, (ref, _) in enumerate(rows):
            number = self.chat_number.get(ref.chat_id)
            if number is None:
                number = self.chat_number[ref.chat_id] = len(self.chat_ids)
                self.chat_ids.append(ref.chat_id)
            row = self.size + offset
            self.chat_of_row[row] = number
            self.rows_of_chat.setdefault(number, []).append(row)
            self.refs.append(ref)
        self.size = need

    def _compact(self) -> None:
        live = [(ref, self.matrix[row].tobytes()) for row, ref in enumerate(self.refs[: self.size]) if ref is not None]
        fresh = VectorIndex.build(self.generation, live, self.dim)
        self.__dict__.update(fresh.__dict__)

    def best_per_chat(
        self, query: np.ndarray, chat_count: int, texts_per_chat: int
    ) -> list[tuple[str, list[tuple[TextRef, float]]]]:
        """The `chat_count` chats with the most similar rows, best first, each with its
        `texts_per_chat` most similar rows."""
        if not self.size or chat_count <= 0:
            return []
        sims = self.matrix[: self.size] @ np.asarray(query, dtype=np.float32)
        sims[self.chat_of_row[: self.size] == _DEAD] = -np.inf
        chats = self._best_chats(sims, chat_count)
        out = []
        for number in chats:
            rows = np.asarray(self.rows_of_chat[number])
            k = min(texts_per_chat, len(rows))
            top = rows[np.argpartition(-sims[rows], k - 1)[:k]] if k < len(rows) else rows
            top = top[np.argsort(-sims[top], kind="stable")]
            texts = []
            for row in top:
                ref = self.refs[int(row)]
                assert ref is not None
                texts.append((ref, float(sims[row])))
            out.append((self.chat_ids[number], texts))
        return out

    def _best_chats(self, sims: np.ndarray, chat_count: int) -> list[int]:
        """The chats of the best rows, in order: a walk down the rows sorted by similarity until
        `chat_count` distinct chats are seen, over the best few thousand rows first."""
        look = min(self.size, _FIRST_ROWS)
        while True:
            top = np.argpartition(-sims, look - 1)[:look] if look < self.size else np.arange(self.size)
            top = top[np.argsort(-sims[top], kind="stable")]
            seen: dict[int, None] = {}
            for row in top:
                if sims[row] == -np.inf:
                    break
                seen.setdefault(int(self.chat_of_row[row]), None)
                if len(seen) == chat_count:
                    return list(seen)
            if look >= self.size:
                return list(seen)
            look = min(self.size, look * 4)
