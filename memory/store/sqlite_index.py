"""The SQLite store's vector search: every embedded text's vector in one matrix searched with
numpy, rebuilt when the store's vector generation changes."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from parla.memory.store import TextRef


@dataclass
class VectorIndex:
    """Every embedded text as one matrix, rows grouped by chat for a per-chat max."""

    generation: int
    matrix: np.ndarray
    chat_ids: list[str]
    group_starts: np.ndarray
    refs: list[TextRef]

    @classmethod
    def build(cls, generation: int, rows: Iterable[tuple[TextRef, bytes]], dim: int) -> VectorIndex:
        ordered = sorted(rows, key=lambda r: r[0].chat_id)
        refs = [ref for ref, _ in ordered]
        matrix = (
            np.frombuffer(b"".join(blob for _, blob in ordered), dtype=np.float32).reshape(len(ordered), dim)
            if ordered
            else np.zeros((0, max(dim, 1)), dtype=np.float32)
        )
        chat_ids: list[str] = []
        starts: list[int] = []
        for i, ref in enumerate(refs):
            if not chat_ids or chat_ids[-1] != ref.chat_id:
                chat_ids.append(ref.chat_id)
                starts.append(i)
        return cls(generation, matrix, chat_ids, np.asarray(starts, dtype=np.int64), refs)

    def best_per_chat(self, query: np.ndarray, match_count: int) -> list[tuple[str, float, TextRef]]:
        if not self.refs:
            return []
        sims = self.matrix @ np.asarray(query, dtype=np.float32)
        best = np.maximum.reduceat(sims, self.group_starts)
        k = min(match_count, len(best))
        top = np.argpartition(-best, k - 1)[:k]
        top = top[np.argsort(-best[top], kind="stable")]
        out = []
        for g in top:
            start = int(self.group_starts[g])
            end = int(self.group_starts[g + 1]) if g + 1 < len(self.group_starts) else len(self.refs)
            row = start + int(np.argmax(sims[start:end]))
            out.append((self.chat_ids[g], float(best[g]), self.refs[row]))
        return out
