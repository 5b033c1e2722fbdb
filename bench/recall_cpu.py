"""Where `recall` across chats spends its CPU time on a store: `python -m bench.recall_cpu STORE
[--dim 768] [--questions 40]`. Prints p50 / p95 milliseconds of the process's CPU time (all its
threads) for each part alone (embedding the question, the store's word search, its vector
search) and for the whole `recall`, with its wall time. CPU time, unlike wall time, says little
about the other jobs of a busy machine."""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path

from bench.memory import percentile
from bench.scale_probe import embedder_of, requests
from parla.memory.config import MemoryConfig
from parla.memory.language.words import query_words
from parla.memory.retrieval.recall import Recall
from parla.memory.store.sqlite.store import SQLiteChatStore
from parla.records.embedding import embed_texts

# what `Recall` asks across chats (memory/retrieval/recall.py)
_WORD_TURNS, _CHATS, _TEXTS_PER_CHAT = 100, 20, 16


async def measure(path: Path, dim: int, count: int) -> dict[str, list[float]]:
    embedder = embedder_of(dim)
    await embedder.embed(["warm the embedder's tables"], "query")
    _, questions = requests()
    out: dict[str, list[float]] = {k: [] for k in ("embed", "words", "vectors", "recall", "recall wall")}
    async with SQLiteChatStore(path) as store:
        recall = Recall(store, embedder, MemoryConfig())
        await recall.recall("open both connections", None)
        for i in range(count):
            question = questions[(i * 5) % len(questions)]
            started = time.process_time()
            (query,) = await embed_texts(embedder, [question], "query")
            embedded = time.process_time()
            await store.search_words(query_words(question), _WORD_TURNS)
            worded = time.process_time()
            await store.search(query, _CHATS, texts_per_chat=_TEXTS_PER_CHAT)
            searched, wall = time.process_time(), time.perf_counter()
            await recall.recall(question, None)
            out["embed"].append((embedded - started) * 1000)
            out["words"].append((worded - embedded) * 1000)
            out["vectors"].append((searched - worded) * 1000)
            out["recall"].append((time.process_time() - searched) * 1000)
            out["recall wall"].append((time.perf_counter() - wall) * 1000)
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", type=Path)
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--questions", type=int, default=40)
    args = parser.parse_args()
    for part, ms in asyncio.run(measure(args.store, args.dim, args.questions)).items():
        print(f"{part:12} p50 {percentile(ms, 0.5):7.1f} ms  p95 {percentile(ms, 0.95):7.1f} ms")
