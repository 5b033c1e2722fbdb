"""Switch resolution: `python -m bench.switch [--quick]`. Prints its figures; asserts nothing.

What a spoken "switch to the chat about ..." costs before the new session can open: the
`switch_chat` tool (embed the request, read the word counts, one store search, the word stage,
rank, decide) plus loading the winner's memory for the new session's seed (`ChatMemory.seed`).
Each chat holds what compaction and the window indexer leave: a description, a chunk summary, a
fact block and a window of every two consecutive turns (offline embedder). Measured on the SQLite
store at 1,000 chats of 50 turns and at 10,000 chats of 10 turns, and on the Supabase store (real
Postgres 18 + pgvector behind the PostgREST shim) at 1,000 chats of 50 turns. Baseline, in the
same run: the store's search call alone with a ready query vector. Also: the first search after a
chat gained a turn (its windows indexed: the index takes that chat's rows only) against a full
reload of the index, and the index's size on disk and in memory per 1,000 chats.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import resource
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from bench.memory import CONFIG, EMBEDDER, REQUESTS, percentile, populate
from bench.report import Report, Table, parse
from parla.daemon.chat_memory import ChatMemory
from parla.memory.retrieval.search import ChatSearch
from parla.memory.retrieval.turn_windows import WindowIndexer
from parla.memory.store.protocol import ChatStore
from parla.memory.store.refused import RefusedTurns
from parla.memory.store.sqlite.store import SQLiteChatStore
from parla.memory.store.supabase.session import sign_in
from parla.memory.store.supabase.store import SupabaseChatStore
from parla.records.embedding import embed_texts
from parla.records.turn import Turn
from parla.tools.chats import ChatTools, SwitchArgs
from tests.peers.postgrest import ANON_KEY, PostgrestShim
from tests.peers.supabase_peer import PostgresCluster


class Session:
    """Where the tools think the conversation is; a switch just moves it."""

    def __init__(self, chat_id: str) -> None:
        self.chat_id = chat_id
        self.switching = False

    def switch(self, chat_id: str) -> None:
        self.chat_id = chat_id


# The seed is all this measures: nothing is saved, so nothing is ever refused.
SEED_ONLY = RefusedTurns(Path(tempfile.gettempdir()) / "bench-switch.refused.jsonl")


async def timed(fn: Callable[[int], Awaitable[object]], runs: int) -> list[float]:
    out = []
    for i in range(runs):
        start = time.perf_counter()
        await fn(i)
        out.append((time.perf_counter() - start) * 1000)
    return out


async def fill(store: ChatStore, chats: int, turns: int) -> float:
    """Seconds to store the chats, their summaries and facts, and index their windows."""
    started = time.perf_counter()
    await populate(store, 0, chats, random.Random(3), turns)
    indexer = WindowIndexer(store, EMBEDDER, CONFIG.search_window_turns)
    await indexer.index_every_chat()
    return time.perf_counter() - started


async def switch_times(store: ChatStore, runs: int) -> tuple[ChatTools, list[float]]:
    """`runs` switches (the tool, then the winner's seed), each in ms, after one to warm up."""
    first = (await store.list_chats(limit=1))[0].id
    session = Session(first)
    tools = ChatTools(store, ChatSearch(store, EMBEDDER, CONFIG), EMBEDDER, session, CONFIG)

    async def switch(i: int) -> None:
        answer = await tools.switch_chat(SwitchArgs(query=REQUESTS[i % len(REQUESTS)]))
        target = answer.get("chat_id") or answer.get("candidates", [{}])[0].get("chat_id") or first
        await ChatMemory(store, CONFIG, target, SEED_ONLY).seed()
        session.chat_id = first

    await switch(0)  # warm: the SQLite store brings its index files up to date after writes
    return tools, await timed(switch, runs)


async def measure(out: Report, name: str, store: ChatStore, chats: int, turns: int, runs: int) -> ChatTools:
    filled = await fill(store, chats, turns)
    queries = await embed_texts(EMBEDDER, REQUESTS, "query")
    tools, ours = await switch_times(store, runs)
    base = await timed(lambda i: store.search(queries[i % len(queries)], 20), runs)
    p50, base50 = percentile(ours, 0.5), percentile(base, 0.5)
    texts = (await store.stats()).embedded_texts
    table = Table(
        ["", "p50 ms", "p95 ms", "ratio"],
        title=f"{name}: {chats:,} chats of {turns} turns, {texts:,} embedded texts (filled in {filled:.1f} s)",
    )
    table.row("store search alone (baseline)", f"{base50:.2f}", f"{percentile(base, 0.95):.2f}", "1.00x")
    table.row(
        "switch resolution (tool + seed load)", f"{p50:.2f}", f"{percentile(ours, 0.95):.2f}", f"{p50 / base50:.2f}x"
    )
    out.table(table)
    return tools


async def after_a_write(out: Report, store: SQLiteChatStore, path: Path, chats: int, runs: int) -> None:
    """The first search after a chat gained a turn and its window, against a rebuild of the
    index files (what a store without them costs once), and the index's footprint."""
    (query,) = await embed_texts(EMBEDDER, REQUESTS[:1], "query")
    indexer = WindowIndexer(store, EMBEDDER, CONFIG.search_window_turns)
    listed = await store.list_chats(limit=runs)
    after: list[float] = []
    for i in range(runs):
        chat = listed[i % len(listed)]
        await store.append_turns(chat.id, [Turn.of("user", f"one more thing about it, number {i}")])
        await indexer.index(chat.id)
        started = time.perf_counter()
        await store.search(query, 20, 5)
        after.append((time.perf_counter() - started) * 1000)
    rss_before = _rss_mb()
    rebuild: list[float] = []
    files = (store._vectors.path, store._vectors.codes_path)
    for _ in range(max(3, runs // 10)):
        for file in files:  # what a first search on a store without its index files costs
            file.unlink()
        started = time.perf_counter()
        await store.search(query, 20, 5)
        rebuild.append((time.perf_counter() - started) * 1000)
    index_mb = sum(file.stat().st_size for file in files) / 2**20
    table = Table(["", "p50 ms", "p95 ms"], title=f"the first search after a write, {chats:,} chats")
    table.row("first search after a new turn", f"{percentile(after, 0.5):.2f}", f"{percentile(after, 0.95):.2f}")
    table.row(
        "with the index files rebuilt (baseline)", f"{percentile(rebuild, 0.5):.2f}", f"{percentile(rebuild, 0.95):.2f}"
    )
    out.table(table)
    out.line(
        f"per 1,000 chats: {path.stat().st_size / 2**20 / chats * 1000:.1f} MB on disk (the store), "
        f"index files {index_mb / chats * 1000:.1f} MB beside it; process RSS {rss_before:.0f} MB"
    )


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def main(out: Report, quick: bool) -> None:
    chats, runs = (200, 20) if quick else (1000, 60)
    with tempfile.TemporaryDirectory() as tmp:
        for many, turns in ((chats, 50), (chats * 10, 10)):
            path = Path(tmp) / f"switch-{many}.db"
            async with SQLiteChatStore(path) as store:
                await measure(out, "SQLite", store, many, turns, runs)
                await after_a_write(out, store, path, many, runs)
        cluster = PostgresCluster()
        try:
            with PostgrestShim(cluster.new_database(), pool_size=2) as shim:
                shim.create_user("bench@example.com", "pw")
                session_file = Path(tmp) / "session.json"
                await sign_in(shim.url, ANON_KEY, "bench@example.com", "pw", session_file)
                remote = await SupabaseChatStore.connect(
                    shim.url, ANON_KEY, outbox_path=Path(tmp) / "outbox.db", session_file=session_file
                )
                async with remote:
                    await measure(
                        out, "Supabase (Postgres + pgvector via supabase-py and the shim)", remote, chats, 50, runs
                    )
        finally:
            cluster.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200 and 2,000 chats, 20 runs")
    args, out = parse(parser)
    asyncio.run(main(out, args.quick))
