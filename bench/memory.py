"""Memory benchmarks: `python -m bench.memory [--quick] [--markdown]`. Prints its figures; asserts nothing.

- prompt memory vs full history, in tokens, at 10 / 100 / 1,000 / 5,000 turns (offline models);
- append latency of one turn at those sizes, and its ratio to the 10-turn chat;
- search latency p50 / p95 at 100 / 1,000 / 10,000 chats (SQLite + numpy), cold (first query
  after a write, which reloads the vector matrix) and warm, with the ratio to 100 chats;
- compaction throughput with the offline summarizer and embedder.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from bench.corpus import chat_record
from bench.report import Report, Table, parse
from parla.kernel.tokens import estimate_tokens
from parla.memory.compaction.compactor import Compactor
from parla.memory.config import MemoryConfig
from parla.memory.context import load_context
from parla.memory.embedders.offline import OfflineEmbedder
from parla.memory.imports.importer import ImportChat, chat_id_of, turns_of
from parla.memory.retrieval.search import ChatSearch
from parla.memory.store.protocol import ChatStore
from parla.memory.store.sqlite.store import SQLiteChatStore
from parla.memory.summarizers.extractive import ExtractiveSummarizer
from parla.records.embedding import embed_texts
from parla.records.summary import SummaryLevel
from parla.records.turn import MessageRange, Turn

CONFIG = MemoryConfig()
# Spoken switch requests for the search and switch benchmarks.
REQUESTS = [
    "the chat about my trip to Japan",
    "my Python service that deadlocks",
    "training for the half marathon",
    "cooking risotto for friends",
    "renovating the kitchen budget",
    "the beagle that keeps barking",
]
EMBEDDER = OfflineEmbedder()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def synthetic_turns(rng: random.Random, n: int, index: int) -> list[Turn]:
    record = chat_record(rng, index, n, time_start())
    chat = ImportChat.model_validate(record)
    return turns_of(chat, chat_id_of(chat))


def time_start() -> datetime:
    return datetime(2026, 1, 1, tzinfo=UTC)


async def bench_sizes(out: Report, tmp: Path, sizes: list[int]) -> None:
    table = Table(
        ["turns", "full tok", "context tok", "ratio", "append ms", f"vs {sizes[0]}"],
        title="prompt memory vs full history, append latency (one turn, median of 30)",
    )
    rng = random.Random(1)
    baseline = None
    async with SQLiteChatStore(tmp / "sizes.db") as store:
        compactor = Compactor(store, ExtractiveSummarizer(), EMBEDDER, CONFIG)
        for n in sizes:
            turns = synthetic_turns(rng, n + 30, index=n)
            chat = (await store.create_chat(turns=turns[:n])).chat
            await compactor.compact(chat.id)
            full = sum(estimate_tokens(t.transcript_line()) for t in turns[:n])
            context = (await load_context(store, chat.id, CONFIG)).total_tokens
            timings = []
            for turn in turns[n:]:
                started = time.perf_counter()
                await store.append_turns(chat.id, [turn])
                timings.append((time.perf_counter() - started) * 1000)
            append = statistics.median(timings)
            baseline = baseline or append
            table.row(n, full, context, f"{context / full:.3f}", f"{append:.3f}", f"{append / baseline:.2f}")
    out.table(table)


async def populate(store: ChatStore, first: int, last: int, rng: random.Random, turns: int = 6) -> None:
    """Chats with what compaction would leave: a description, chunk summaries and facts."""
    for i in range(first, last):
        record = chat_record(rng, i, turns, time_start())
        texts = [t["text"] for t in record["turns"]]
        parsed = ImportChat.model_validate(record)
        chat = (await store.create_chat(chat_id=chat_id_of(parsed), turns=turns_of(parsed, chat_id_of(parsed)))).chat
        description, chunk, facts = await embed_texts(
            EMBEDDER, [" ".join(texts[:3]), " ".join(texts[3:]), "- " + texts[0]]
        )
        await store.set_summary_text(chat.id, description, 0, title=f"chat {i}")
        await store.upsert_summary(chat.id, SummaryLevel.CHUNK, MessageRange(start=1, end=10), chunk)
        await store.upsert_facts(chat.id, MessageRange(start=1, end=10), [texts[0]], facts)


async def bench_search(out: Report, tmp: Path, sizes: list[int], queries: int) -> None:
    table = Table(
        ["chats", "texts", "cold ms", "p50 ms", "p95 ms", f"p50 vs {sizes[0]}"],
        title="search latency (embed query + store search + ranking)",
    )
    baseline = None
    rng = random.Random(2)
    async with SQLiteChatStore(tmp / "search.db") as store:
        search = ChatSearch(store, EMBEDDER, CONFIG)
        have = 0
        for n in sizes:
            await populate(store, have, n, rng)
            have = n
            started = time.perf_counter()
            await search.search(REQUESTS[0])
            cold = (time.perf_counter() - started) * 1000
            timings = []
            for i in range(queries):
                started = time.perf_counter()
                await search.search(REQUESTS[i % len(REQUESTS)])
                timings.append((time.perf_counter() - started) * 1000)
            p50, p95 = percentile(timings, 0.5), percentile(timings, 0.95)
            baseline = baseline or p50
            texts = (await store.stats()).embedded_texts
            table.row(n, texts, f"{cold:.2f}", f"{p50:.2f}", f"{p95:.2f}", f"{p50 / baseline:.2f}")
    out.table(table)


async def bench_compaction(out: Report, tmp: Path, chats: int) -> None:
    rng = random.Random(3)
    async with SQLiteChatStore(tmp / "compaction.db") as store:
        compactor = Compactor(store, ExtractiveSummarizer(), EMBEDDER, CONFIG)
        ids, total = [], 0
        for i in range(chats):
            record = chat_record(rng, i, rng.randint(20, 120), time_start())
            chat = ImportChat.model_validate(record)
            cid = chat_id_of(chat)
            await store.create_chat(chat_id=cid, turns=turns_of(chat, cid))
            ids.append(cid)
            total += len(chat.turns)
        started = time.perf_counter()
        folded = chunks = 0
        for cid in ids:
            report = await compactor.compact(cid)
            folded += report.turns_folded
            chunks += report.chunk_summaries
        elapsed = time.perf_counter() - started
    table = Table(
        ["chats", "turns", "s", "turns/s", "turns folded", "chunk summaries + facts", "chats/s"],
        title="compaction throughput (offline summarizer and embedder)",
    )
    table.row(chats, total, f"{elapsed:.2f}", f"{total / elapsed:,.0f}", folded, chunks, f"{chats / elapsed:.1f}")
    out.table(table)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    args, out = parse(parser)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp)
        if args.quick:
            await bench_sizes(out, path, [10, 100])
            await bench_search(out, path, [100, 300], 20)
            await bench_compaction(out, path, 10)
        else:
            await bench_sizes(out, path, [10, 100, 1000, 5000])
            await bench_search(out, path, [100, 1000, 10000], 100)
            await bench_compaction(out, path, 100)


if __name__ == "__main__":
    asyncio.run(main())
