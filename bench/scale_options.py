"""Vector search options on one store's vectors, in one run: today's exact float search (one
float32 matrix in the heap) against the on-disk candidates Parla could use, each followed by
the same exact rescoring of its best candidate chats. Prints one JSON line per option: top-10
agreement with the exact search (switch requests and recall questions), latency of finding the
candidates (for Parla's own: its whole store search, rescoring included), what the option keeps
in the heap and on disk per vector, build time.

    python -m bench.scale_options STORE [--dim 768]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from bench.memory import percentile
from bench.scale_probe import embedder_of, requests
from parla.daemon.settings import Settings
from parla.memory.config import MemoryConfig
from parla.memory.store.sqlite.rows import vector_matrix
from parla.memory.store.sqlite.store import SQLiteChatStore
from parla.records.embedding import EmbeddedText

TOP = 10
CANDIDATES = 100  # chats rescored exactly, as sqlite_vector_file does for a search of 20


def load(path: Path) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Every vector of the store with its chat's index, as today's index held them."""
    db = sqlite3.connect(path)
    rows = db.execute(
        "SELECT id, summary_embedding FROM chats WHERE summary_embedding IS NOT NULL "
        "UNION ALL SELECT chat_id, embedding FROM summaries "
        "UNION ALL SELECT chat_id, embedding FROM facts WHERE embedding IS NOT NULL "
        "UNION ALL SELECT chat_id, embedding FROM turn_windows"
    ).fetchall()
    db.close()
    ids = sorted({r[0] for r in rows})
    number = {chat_id: n for n, chat_id in enumerate(ids)}
    chat = np.array([number[r[0]] for r in rows])
    matrix = vector_matrix([r[1] for r in rows])
    return ids, chat, matrix


class Exact:
    def __init__(self, chat: np.ndarray, matrix: np.ndarray, chats: int) -> None:
        self.chat, self.matrix, self.chats = chat, matrix, chats

    def best(self, sims: np.ndarray, count: int) -> list[int]:
        best = np.full(self.chats, -np.inf, dtype=np.float32)
        np.maximum.at(best, self.chat, sims)
        return [int(n) for n in np.argsort(-best, kind="stable")[:count]]

    def search(self, query: np.ndarray) -> list[int]:
        return self.best(self.matrix @ query, TOP)

    def agreement(self, query: np.ndarray, found: list[int]) -> float:
        """The share of the exact top 10 that `found` (rescored exactly) holds; a chat tied with
        the exact 10th within float32 noise (the corpus repeats sentences across chats) counts."""
        best = np.full(self.chats, -np.inf, dtype=np.float32)
        np.maximum.at(best, self.chat, self.matrix @ query)
        tenth = np.sort(best)[-TOP]
        return sum(1 for chat in self.rescore(query, found) if best[chat] >= tenth - 1e-5) / TOP

    def rescore(self, query: np.ndarray, candidates: list[int]) -> list[int]:
        rows = np.isin(self.chat, candidates)
        sims = np.full(len(self.matrix), -np.inf, dtype=np.float32)
        sims[rows] = self.matrix[rows] @ query
        return self.best(sims, TOP)


def int8_file(folder: Path, matrix: np.ndarray) -> tuple[np.memmap, np.ndarray]:
    scale = np.abs(matrix).max(axis=1) / 127
    codes = np.memmap(folder / "vectors.i8", dtype=np.int8, mode="w+", shape=matrix.shape)
    codes[:] = np.round(matrix / scale[:, None])
    codes.flush()
    return np.memmap(folder / "vectors.i8", dtype=np.int8, mode="r", shape=matrix.shape), scale.astype(np.float32)


def usearch_index(folder: Path, matrix: np.ndarray) -> object:
    from usearch.index import Index  # optional: only this option needs it

    index = Index(ndim=matrix.shape[1], metric="ip", dtype="i8")
    index.add(np.arange(len(matrix)), matrix)
    index.save(str(folder / "vectors.usearch"))
    return Index.restore(str(folder / "vectors.usearch"), view=True)


def measure(
    name: str,
    candidates: Callable[[np.ndarray], list[int]],
    exact: Exact,
    queries: dict[str, list[np.ndarray]],
    heap_bytes: float,
    disk_bytes: float,
    build_s: float,
) -> dict[str, object]:
    out: dict[str, object] = {"option": name, "heap_bytes_per_vector": heap_bytes, "disk_bytes_per_vector": disk_bytes}
    out["build_s"] = round(build_s, 2)
    timings = []
    for kind, vectors in queries.items():
        agree = []
        for query in vectors:
            started = time.perf_counter()
            found = candidates(query)
            timings.append((time.perf_counter() - started) * 1000)
            agree.append(exact.agreement(query, found))
        out[f"agreement_{kind}"] = round(float(np.mean(agree)), 4)
    out["candidates_ms_p50"] = round(percentile(timings, 0.5), 2)
    out["candidates_ms_p95"] = round(percentile(timings, 0.95), 2)
    return out


# The index's stages before they grew with the store: a shortlist of 300 chats, 10 finalists more
# than asked for (the baseline measured beside its settings in the same run).
FIXED = {"index_shortlist_share": 0.0, "index_finalists_share": 0.0}


async def store_candidates(
    path: Path, ids: list[str], embedder_name: str, config: MemoryConfig
) -> Callable[[np.ndarray], list[int]]:
    """Parla's own index (sign bits on disk, then its exact rescoring) through the store."""
    number = {chat_id: n for n, chat_id in enumerate(ids)}
    store = SQLiteChatStore(path, config)
    await store.open()
    loop = asyncio.get_running_loop()

    def search(query: np.ndarray) -> list[int]:
        matches = asyncio.run_coroutine_threadsafe(
            store.search(EmbeddedText("q", query, embedder_name), TOP), loop
        ).result()
        return [number[m.chat_id] for m in matches]

    search.store = store  # type: ignore[attr-defined]
    return search


async def main(path: Path, dim: int, with_usearch: bool) -> None:
    embedder = embedder_of(dim)
    switches, questions = requests()
    queries = {
        "switch": list(await embedder.embed(switches, "query")),
        "recall": list(await embedder.embed(questions, "query")),
    }
    ids, chat, matrix = load(path)
    exact = Exact(chat, matrix, len(ids))
    rows = len(matrix)
    results = [measure("exact float32 in the heap (today)", exact.search, exact, queries, matrix.itemsize * dim, 0, 0)]
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        codes, scale = int8_file(Path(tmp), matrix)
        built = time.perf_counter() - started

        def int8_candidates(query: np.ndarray) -> list[int]:
            sims = np.concatenate(
                [
                    (codes[s : s + 32768].astype(np.float32) @ query) * scale[s : s + 32768]
                    for s in range(0, rows, 32768)
                ]
            )
            return exact.best(sims, CANDIDATES)

        results.append(
            measure("int8 rows in a numpy memmap, full scan", int8_candidates, exact, queries, 0, dim + 4, built)
        )
        if with_usearch:
            started = time.perf_counter()
            index = usearch_index(Path(tmp), matrix)
            built = time.perf_counter() - started

            def usearch_candidates(query: np.ndarray) -> list[int]:
                found = index.search(query, 2000).keys  # type: ignore[attr-defined]
                seen: dict[int, None] = {}
                for row in found:
                    seen.setdefault(int(chat[row]), None)
                return list(seen)[:CANDIDATES]

            disk = (Path(tmp) / "vectors.usearch").stat().st_size / rows
            results.append(
                measure("usearch HNSW i8, memory-mapped view", usearch_candidates, exact, queries, 0, disk, built)
            )
    for suffix in ("-vectors", "-vectors.i8"):  # so its build time is a rebuild's, from the store
        path.with_name(path.name + suffix).unlink(missing_ok=True)
    settings = Settings()  # its PARLA_INDEX_* knobs from the environment
    record = (dim + 63) // 64 * 8 + 8
    built = 0.0
    for name, config in (
        ("sign bits in a file + exact rescoring from the store (Parla's)", settings),
        ("the same, its stages fixed as before (baseline)", settings.model_copy(update=FIXED)),
    ):
        search = await store_candidates(path, ids, embedder.name, config)
        try:
            if not built:
                started = time.perf_counter()
                await asyncio.to_thread(search, queries["switch"][0])  # builds the file when the store has none
                built = time.perf_counter() - started
            results.append(await asyncio.to_thread(measure, name, search, exact, queries, 0, record, built))
        finally:
            await search.store.close()  # type: ignore[attr-defined]
    for result in results:
        print(json.dumps(result))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", type=Path)
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--no-usearch", action="store_true", help="skip usearch (its index build is the slowest)")
    args = parser.parse_args()
    asyncio.run(main(args.store, args.dim, not args.no_usearch))
