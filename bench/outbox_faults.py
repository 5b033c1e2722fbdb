"""The outbox under faults: `python -m bench.outbox_faults [--quick]`. Prints its figures; asserts nothing.

Real Postgres 18 + pgvector with the migrations behind the PostgREST shim of tests/peers, reached
through supabase-py. Appends of two turns each go to five chats in turn, first with no fault (the
baseline, same run), then with a share of the append requests answered by a fault of every kind
a real project gives: PGRST003, serialization failure, deadlock, statement timeout, gateway
408/429/502/503/504 pages (HTML, text, JSON without a code), the connection dropped before the
request ran or after it committed (the answer lost); and every 100 appends an outage of five
appends (connection refused). An append that cannot go through returns `StoreOffline` (its
turns wait in the outbox) and the next one sends the queue first. At the end every chat is read
back in SQL: each turn must be stored exactly once, in the order it was appended.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

import psycopg

from bench.memory import percentile
from bench.report import Report, Table, parse
from parla.memory.errors import StoreOffline
from parla.memory.store.supabase.session import sign_in
from parla.memory.store.supabase.store import RetryPolicy, SupabaseChatStore
from parla.records.turn import Turn
from tests.peers.postgrest import ANON_KEY, TEMPORARY_FAULTS, PostgrestShim
from tests.peers.supabase_peer import PostgresCluster

CHATS = 5
APPEND_PATH = "/rest/v1/rpc/append_turns"


async def run(store: SupabaseChatStore, shim: PostgrestShim, appends: int, label: str, outages: bool) -> dict:
    """`appends` appends of two turns over CHATS chats; returns what was sent and how it went."""
    chats = [(await store.create_chat(title=f"{label} {i}")).chat.id for i in range(CHATS)]
    sent: dict[str, list[str]] = {c: [] for c in chats}
    ms: list[float] = []
    queued = 0
    for n in range(appends):
        if outages and n % 100 == 50:
            shim.refuse()
        if outages and n % 100 == 55:
            shim.recover()
        chat = chats[n % CHATS]
        turns = [Turn.of("user", f"{label} {n} question"), Turn.of("model", f"{label} {n} answer " * 10)]
        sent[chat] += [t.id for t in turns]
        start = time.perf_counter()
        try:
            await store.append_turns(chat, turns)
        except StoreOffline:
            queued += 1
        ms.append((time.perf_counter() - start) * 1000)
    shim.recover()
    shim.faults.clear()
    await store.flush()
    return {"sent": sent, "ms": ms, "queued": queued}


def check(dsn: str, sent: dict[str, list[str]]) -> tuple[int, int, int, int]:
    """(stored, lost, duplicated, out of order) over every chat, read in SQL."""
    stored = lost = duplicated = disordered = 0
    with psycopg.connect(dsn) as conn:
        for chat, ids in sent.items():
            rows = conn.execute(
                "SELECT id::text, seq FROM public.chat_turns WHERE chat_id = %s ORDER BY seq", (chat,)
            ).fetchall()
            got = [r[0] for r in rows]
            stored += len(got)
            lost += len(set(ids) - set(got))
            duplicated += len(got) - len(set(got))
            in_order = got == ids and [r[1] for r in rows] == list(range(1, len(ids) + 1))
            disordered += 0 if in_order else 1
    return stored, lost, duplicated, disordered


async def main(out: Report, quick: bool) -> None:
    appends = 100 if quick else 500
    share = 0.35
    cluster = PostgresCluster()
    dsn = cluster.new_database()
    retry = RetryPolicy(attempts=3, delay=0.02, max_delay=0.5)
    try:
        with tempfile.TemporaryDirectory() as tmp, PostgrestShim(dsn, pool_size=2) as shim:
            shim.create_user("bench@example.com", "pw")
            await sign_in(shim.url, ANON_KEY, "bench@example.com", "pw", Path(tmp) / "s.json")
            store = await SupabaseChatStore.connect(
                shim.url, ANON_KEY, outbox_path=Path(tmp) / "o.db", session_file=Path(tmp) / "s.json", retry=retry
            )
            async with store:
                start = time.perf_counter()
                base = await run(store, shim, appends, "baseline", outages=False)
                base_s = time.perf_counter() - start
                base_requests = shim.faults.requests[APPEND_PATH]

                shim.faults.random(share, TEMPORARY_FAULTS, path=APPEND_PATH, seed=12)
                start = time.perf_counter()
                faulty = await run(store, shim, appends, "faults", outages=True)
                faulty_s = time.perf_counter() - start
                requests = shim.faults.requests[APPEND_PATH] - base_requests
                waiting, failed = await store.outbox.depth()

        injected = shim.faults.injected
        total = sum(injected.values())
        out.line(f"retries: {retry.attempts} tries, first wait {retry.delay} s, at most {retry.max_delay} s apart")
        out.line(f"append requests in the fault run: {requests}; faults injected: {total} ({total / requests:.0%})")
        out.line("by kind: " + ", ".join(f"{k} {injected[k]}" for k in TEMPORARY_FAULTS))
        out.line(f"plus {appends // 100} outages of 5 appends each (connection refused)")
        out.line(f"appends answered StoreOffline (turns queued, sent with a later append): {faulty['queued']}")
        table = Table(
            ["run", "s", "append p50 ms", "append p95 ms", "stored", "lost", "duplicated", "chats out of order"],
            title=f"{appends} appends of 2 turns over {CHATS} chats, then the same with faults",
        )
        for label, result, seconds in (("baseline", base, base_s), ("with faults", faulty, faulty_s)):
            stored, lost, duplicated, disordered = check(dsn, result["sent"])
            p50, p95 = percentile(result["ms"], 0.5), percentile(result["ms"], 0.95)
            table.row(
                label,
                f"{seconds:.1f}",
                f"{p50:.1f}",
                f"{p95:.1f}",
                f"{stored} of {2 * appends}",
                lost,
                duplicated,
                disordered,
            )
        out.table(table)
        out.line(f"outbox after the run: {waiting} waiting, {failed} refused")
    finally:
        cluster.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100 appends instead of 500")
    args, out = parse(parser)
    asyncio.run(main(out, args.quick))
