"""Switch resolution: `python -m bench.switch [--quick]`. Prints its figures; asserts nothing.

What a spoken "switch to the chat about ..." costs before the new session can open: the
`switch_chat` tool (embed the request, one store search, rank with recency, decide) plus loading
the winner's memory for the new session's seed (`ChatMemory.seed`). Over 1,000 chats (a
description, a chunk summary and a fact block each, offline embedder) on the SQLite store and on
the Supabase store (real Postgres 18 + pgvector behind the PostgREST shim). Baseline, in the same
run: the store's search call alone with a ready query vector.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from bench.memory import CONFIG, EMBEDDER, REQUESTS, percentile, populate
from parla.daemon.chat_memory import ChatMemory
from parla.memory.embedding import embed_texts
from parla.memory.refused import RefusedTurns
from parla.memory.search import ChatSearch
from parla.memory.store import ChatStore
from parla.memory.store.sqlite import SQLiteChatStore
from parla.memory.store.supabase import SupabaseChatStore
from parla.memory.store.supabase_session import sign_in
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


async def measure(name: str, store: ChatStore, chats: int, runs: int) -> None:
    started = time.perf_counter()
    await populate(store, 0, chats, random.Random(3))
    filled = time.perf_counter() - started
    first = (await store.list_chats(limit=1))[0].id
    session = Session(first)
    tools = ChatTools(store, ChatSearch(store, EMBEDDER, CONFIG), EMBEDDER, session, CONFIG)
    queries = await embed_texts(EMBEDDER, REQUESTS, "query")

    async def switch(i: int) -> None:
        answer = await tools.switch_chat(SwitchArgs(query=REQUESTS[i % len(REQUESTS)]))
        target = answer.get("chat_id") or answer.get("candidates", [{}])[0].get("chat_id") or first
        await ChatMemory(store, CONFIG, target, SEED_ONLY).seed()
        session.chat_id = first

    await switch(0)  # warm: the SQLite store loads its vector matrix once after writes
    ours = await timed(switch, runs)
    base = await timed(lambda i: store.search(queries[i % len(queries)], 20), runs)
    p50, base50 = percentile(ours, 0.5), percentile(base, 0.5)
    print(f"{name}: {chats:,} chats (filled in {filled:.1f} s)")
    print(f"  switch resolution (tool + seed load)  p50 {p50:7.2f} ms  p95 {percentile(ours, 0.95):7.2f} ms")
    print(f"  store search alone (baseline)         p50 {base50:7.2f} ms  p95 {percentile(base, 0.95):7.2f} ms")
    print(f"  ratio {p50 / base50:.2f}x")


async def main(quick: bool) -> None:
    chats, runs = (200, 20) if quick else (1000, 60)
    with tempfile.TemporaryDirectory() as tmp:
        async with SQLiteChatStore(Path(tmp) / "switch.db") as store:
            await measure("SQLite", store, chats, runs)
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
                    await measure("Supabase (Postgres + pgvector via supabase-py and the shim)", remote, chats, runs)
        finally:
            cluster.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200 chats, 20 runs")
    asyncio.run(main(parser.parse_args().quick))
