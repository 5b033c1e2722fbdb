"""Recall latency: `python -m bench.recall_latency [--chats N] [--turns N]`. Prints figures only.

A SQLite store of 1,000 chats of 50 turns (the synthetic corpus of bench.corpus), every window of
what was said indexed as compaction indexes it, each chat with a description, a chunk summary and
facts; then `recall` (embedding the request, words and meaning over every chat, dates of the
results) is timed across every chat and inside one chat, p50 / p95 over repeated requests, in
wall time and in the process's CPU time (all its threads: what the figures would be on an idle
machine, which a shared one is not).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import tempfile
import time
from pathlib import Path

from bench.memory import CONFIG, EMBEDDER, REQUESTS, percentile, populate
from bench.report import Report, Table, parse
from parla.memory.recall import Recall
from parla.memory.store.sqlite import SQLiteChatStore
from parla.memory.turn_windows import WindowIndexer


async def main(out: Report, chats: int, turns: int, queries: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        async with SQLiteChatStore(Path(tmp) / "recall.db") as store:
            started = time.perf_counter()
            await populate(store, 0, chats, random.Random(3), turns=turns)
            indexer = WindowIndexer(store, EMBEDDER, CONFIG.search_window_turns)
            await indexer.index_every_chat()
            built = time.perf_counter() - started
            texts = (await store.stats()).embedded_texts
            recall = Recall(store, EMBEDDER, CONFIG)
            one = (await store.list_chats(limit=1))[0].id
            await recall.recall(REQUESTS[0], None)  # the first loads the vector index
            table = Table(
                ["recall", "p50 ms", "p95 ms", "CPU p50 ms", "CPU p95 ms"],
                title=f"recall latency: {chats} chats x {turns} turns, {texts} embedded texts (built in {built:.0f} s)",
            )
            for name, scope in (("across every chat", None), ("inside one chat", one)):
                timings, cpu = [], []
                for i in range(queries):
                    began, began_cpu = time.perf_counter(), time.process_time()
                    await recall.recall(REQUESTS[i % len(REQUESTS)], scope)
                    timings.append((time.perf_counter() - began) * 1000)
                    cpu.append((time.process_time() - began_cpu) * 1000)
                table.row(
                    name,
                    f"{percentile(timings, 0.5):.1f}",
                    f"{percentile(timings, 0.95):.1f}",
                    f"{percentile(cpu, 0.5):.1f}",
                    f"{percentile(cpu, 0.95):.1f}",
                )
            out.table(table)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chats", type=int, default=1000)
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--queries", type=int, default=60)
    args, out = parse(parser)
    asyncio.run(main(out, args.chats, args.turns, args.queries))
