"""Recall latency: `python -m bench.recall_latency [--chats N] [--turns N]`, or in fresh processes
on a store built before (`bench.scale`'s 5,000-chat import): `python -m bench.recall_latency
--store PATH [--processes N] [--dim 768]`. Prints figures only.

Built here: a SQLite store of 1,000 chats of 50 turns (the synthetic corpus of bench.corpus), every
window of what was said indexed as compaction indexes it, each chat with a description, a chunk
summary and facts; then `recall` (embedding the request, words and meaning over every chat, dates
of the results) is timed across every chat and inside one chat, p50 / p95 over repeated requests,
in wall time and in the process's CPU time (all its threads: what the figures would be on an idle
machine, which a shared one is not).

`--store`: the store is copied (never written), then fresh processes that load what `parla run`
loads open the copy as the daemon does, and time its first recalls after a start: each times 20
`recall` questions across chats and then 20 switch searches (`bench.scale_probe`'s), in wall and
CPU time. The processes alternate between three states:
- as the daemon once ready: what the process loaded kept out of the garbage collector's passes
  (`daemon/heap.py`), the word search's figures (each word's count of turns and the most it adds
  to a turn) kept in the file by the questions asked before (the copy is asked them once first),
  as in a store in use;
- the same with the collector walking everything, as before the daemon settled its heap: the
  baseline of the same run;
- that and the word figures dropped just before the process, so that it finds them itself, as
  every new process did before they were kept.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.memory import CONFIG, EMBEDDER, REQUESTS, percentile, populate
from bench.report import Report, Table, parse
from bench.scale_probe import embedder_of, requests
from parla.daemon.heap import settled_heap
from parla.memory.retrieval.recall import Recall
from parla.memory.retrieval.search import ChatSearch
from parla.memory.retrieval.turn_windows import WindowIndexer
from parla.memory.store.sqlite.store import SQLiteChatStore

_ROOT = Path(__file__).resolve().parent.parent


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


async def fresh(path: Path, dim: int, runs: int, settled: bool) -> dict[str, list[float]]:
    """One fresh process's figures (run by `--probe`): each recall's wall and CPU milliseconds,
    then each switch search's; `settled`: the heap kept out of the collector's passes, as the
    daemon's once ready."""
    # what `parla run` loads (about 195,000 objects the collector tracks), so that a collection
    # walks what it walks in the daemon
    for module in ("parla.daemon.cli", "parla.daemon.supervisor"):
        importlib.import_module(module)
    embedder = embedder_of(dim)
    await embedder.embed(["warm the embedder's tables"], "query")  # its loading is not the store's cost
    switches, questions = requests()
    out: dict[str, list[float]] = {"recall": [], "cpu": [], "switch": []}
    async with SQLiteChatStore(path) as store, settled_heap() if settled else contextlib.nullcontext():
        recall, search = Recall(store, embedder, CONFIG), ChatSearch(store, embedder, CONFIG)
        for i in range(runs):
            began, began_cpu = time.perf_counter(), time.process_time()
            await recall.recall(questions[(i * 5) % len(questions)], None)
            out["recall"].append((time.perf_counter() - began) * 1000)
            out["cpu"].append((time.process_time() - began_cpu) * 1000)
        for i in range(runs):
            began = time.perf_counter()
            await search.search(switches[(i * 7 + 1) % len(switches)])
            out["switch"].append((time.perf_counter() - began) * 1000)
    return out


async def _ready(path: Path, dim: int, runs: int) -> None:
    """The copy opened once (its migrations, its vector index brought up to date) and asked the
    processes' questions once, as a store in use has been asked before."""
    embedder = embedder_of(dim)
    questions = requests()[1]
    async with SQLiteChatStore(path) as store:
        recall = Recall(store, embedder, CONFIG)
        for i in range(runs):
            await recall.recall(questions[(i * 5) % len(questions)], None)


def _on_file(path: Path, sql: str) -> int:
    """One statement on the copy, committed: its first column's value, or the rows it changed."""
    db = sqlite3.connect(path)
    try:
        with db:
            cursor = db.execute(sql)
            row = cursor.fetchone()
            return int(row[0]) if row else cursor.rowcount
    finally:
        db.close()


def on_store(out: Report, store: Path, processes: int, dim: int, runs: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / store.name
        for part in store.parent.glob(store.name + "*"):
            if not part.name.endswith(("-wal", "-shm")):
                shutil.copy2(part, copy.with_name(part.name))
        asyncio.run(_ready(copy, dim, runs))
        turns = _on_file(copy, "SELECT count(*) FROM turns")
        states = {  # (heap settled, word figures kept)
            "heap settled as the daemon's, word figures kept": (True, True),
            "heap as before, word figures kept (baseline)": (False, True),
            "heap as before, word figures dropped": (False, False),
        }
        figures: dict[str, dict[str, list[float]]] = {
            s: {"recall": [], "cpu": [], "switch": [], "first": []} for s in states
        }
        loads: dict[str, list[float]] = {s: [] for s in states}
        for _ in range(processes):
            for state, (settled, kept) in states.items():
                if not kept:
                    _on_file(copy, "DELETE FROM word_bounds")
                loads[state].append(os.getloadavg()[0])
                line = subprocess.run(
                    [sys.executable, "-m", "bench.recall_latency", "--probe", str(copy), "--dim", str(dim)]
                    + ["--queries", str(runs)]
                    + (["--settled"] if settled else []),
                    check=True,
                    capture_output=True,
                    text=True,
                    cwd=_ROOT,
                ).stdout
                got = json.loads(line)
                for key in ("recall", "cpu", "switch"):
                    figures[state][key] += got[key]
                figures[state]["first"].append(got["recall"][0])
    table = Table(
        ["fresh processes", "load average", "first recall ms", "recall p50 ms", "recall p95 ms", "CPU p50 ms"]
        + ["CPU p95 ms", "switch p50 ms", "switch p95 ms"],
        title=f"recall across chats in {processes} fresh processes each, {runs} questions each: {store.name}, "
        f"{turns:,} turns, {dim} dims",
    )
    for state, f in figures.items():
        table.row(
            state,
            f"{min(loads[state]):.1f}-{max(loads[state]):.1f}",
            f"{percentile(f['first'], 0.5):.0f}",
            *(f"{percentile(f[key], q):.1f}" for key in ("recall", "cpu") for q in (0.5, 0.95)),
            *(f"{percentile(f['switch'], q):.1f}" for q in (0.5, 0.95)),
        )
    out.table(table)
    settled, before, _ = figures.values()
    out.line(
        "settled / before, p95: wall "
        f"{percentile(settled['recall'], 0.95) / percentile(before['recall'], 0.95):.2f}, CPU time "
        f"{percentile(settled['cpu'], 0.95) / percentile(before['cpu'], 0.95):.2f}, first recall "
        f"{percentile(settled['first'], 0.5) / percentile(before['first'], 0.5):.2f}"
    )


if __name__ == "__main__":
    if sys.argv[1:2] == ["--probe"]:  # one fresh process of `--store`: a JSON line
        probe = argparse.ArgumentParser()
        probe.add_argument("--probe", type=Path)
        probe.add_argument("--dim", type=int)
        probe.add_argument("--queries", type=int)
        probe.add_argument("--settled", action="store_true")
        a = probe.parse_args()
        print(json.dumps(asyncio.run(fresh(a.probe, a.dim, a.queries, a.settled))))
        raise SystemExit
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chats", type=int, default=1000)
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--queries", type=int, help="requests timed: 60 (built), 20 a process (--store)")
    parser.add_argument("--store", type=Path, help="a store built before: timed in fresh processes")
    parser.add_argument("--processes", type=int, default=5, help="fresh processes of each kind (--store)")
    parser.add_argument("--dim", type=int, default=256, help="the store's embedder: 256 offline, else the stand-in")
    args, out = parse(parser)
    if args.store is None:
        asyncio.run(main(out, args.chats, args.turns, args.queries or 60))
    else:
        on_store(out, args.store, args.processes, args.dim, args.queries or 20)
