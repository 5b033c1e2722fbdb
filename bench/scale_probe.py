"""One fresh process opening a store as the daemon does (the daemon's modules imported, the
SQLite store opened with the PARLA_ settings of its environment, nothing searched yet), then: the first spoken switch search, 20 more, 20
`recall` questions across chats, and the process's resident memory after them. Prints one JSON
line; `bench.scale` runs it once per opening.

    python -m bench.scale_probe STORE [--dim 768]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path

import numpy as np

import parla.daemon.service  # noqa: F401  (the daemon's own imports, as `parla run` has them)
from bench.corpus import FILLS, SUBJECTS
from parla.daemon.settings import Settings
from parla.memory.config import MemoryConfig
from parla.memory.embedders.offline import OfflineEmbedder
from parla.memory.retrieval.recall import Recall
from parla.memory.retrieval.search import ChatSearch
from parla.memory.store.protocol import ChatStore
from parla.memory.store.sqlite.store import SQLiteChatStore
from parla.records.embedding import Embedder, TaskType, WrappedEmbedder, normalize_rows


class Wide(WrappedEmbedder):
    """A deterministic 768-dim stand-in for Gemini's embedder: the offline vectors through one
    fixed random projection (the same structure, three times the bytes)."""

    def __init__(self, dim: int = 768) -> None:
        super().__init__(OfflineEmbedder())
        self.name = f"{self.inner.name}-projected-{dim}"
        self.dim = dim
        self._projection = np.random.default_rng(768).standard_normal((self.inner.dim, dim)).astype(np.float32)

    def project(self, vectors: np.ndarray) -> np.ndarray:
        """What this embedder makes of texts the offline embedder made `vectors` of."""
        return normalize_rows(vectors @ self._projection)

    async def embed(self, texts: list[str], task: TaskType) -> np.ndarray:
        return self.project(await self.inner.embed(texts, task))


def embedder_of(dim: int) -> Embedder:
    return OfflineEmbedder() if dim == 256 else Wide(dim)


def requests() -> tuple[list[str], list[str]]:
    """Spoken switch requests and recall questions about the corpus' subjects."""
    switches, questions = [], []
    for template, aspects in SUBJECTS:
        key = template[template.index("{") + 1 : template.index("}")]
        for n, fill in enumerate(FILLS[key]):
            topic = template.format(**{key: fill})
            switches.append(f"the chat about {topic}")
            questions.append(f"what did I decide about the {aspects[n % len(aspects)]} for {topic}")
    return switches, questions


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def searches(
    store: ChatStore, embedder: Embedder, runs: int, config: MemoryConfig
) -> tuple[list[float], list[float]]:
    """`runs` switch searches, then `runs` recall questions across chats: each one's milliseconds."""
    switches, questions = requests()
    search = ChatSearch(store, embedder, config)
    recall = Recall(store, embedder, config)
    switch_ms, recall_ms = [], []
    for i in range(runs):
        started = time.perf_counter()
        await search.search(switches[(i * 7 + 1) % len(switches)])
        switch_ms.append((time.perf_counter() - started) * 1000)
    for i in range(runs):
        started = time.perf_counter()
        await recall.recall(questions[(i * 5) % len(questions)], None)
        recall_ms.append((time.perf_counter() - started) * 1000)
    return switch_ms, recall_ms


async def probe(path: Path, dim: int, runs: int) -> dict[str, object]:
    embedder = embedder_of(dim)
    await embedder.embed(["warm the embedder's tables"], "query")  # not the store's cost
    config = Settings()
    async with SQLiteChatStore(path, config) as store:
        started = time.perf_counter()
        await ChatSearch(store, embedder, config).search(requests()[0][0])
        first = time.perf_counter() - started
        switch_ms, recall_ms = await searches(store, embedder, runs, config)
        return {"first_s": first, "switch_ms": switch_ms, "recall_ms": recall_ms, "rss_mb": rss_mb()}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", type=Path)
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(probe(args.store, args.dim, args.runs))))
