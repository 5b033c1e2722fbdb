"""A heavy user's history: `python -m bench.scale [--quick | --big] [--store supabase]`. Prints its
figures; asserts nothing (`--store supabase`: the same on the Postgres peer, `bench.scale_supabase`;
beyond 500 chats built by copying a SQLite import, `bench.supabase_load`).

Builds 500 and 5,000 chats of `bench.corpus` (`--quick`: 500 only; `--big` adds 20,000) through
`parla import` (offline embedder and summarizer, a process of its own: turns/s and its peak RSS),
then for the offline embedder's 256 dims and for a deterministic 768-dim stand-in (the same store
re-embedded; `bench.scale_probe.Wide`):
- 5 fresh processes opening the store as the daemon does (`bench.scale_probe`): the first switch
  search after opening (p95 over the 5), switch search and `recall` across chats p50 / p95, and the
  process's RSS after them (the daemon's modules imported; the voice stack is not started),
  alternating with 5 whose vector index keeps its stages fixed as before they grew with the store
  (the baseline: `bench.scale_options.FIXED`);
- the vector search options on the same vectors (`bench.scale_options`): top-10 agreement with
  the exact float search, latency, bytes per vector in the heap and on disk (Parla's index with
  its stages as set and as before);
- the store's size per 1,000 turns and what takes it (dbstat), with the index files.

`--keep FOLDER` builds the stores there and keeps them: a later run with the same FOLDER measures
them again without importing (and makes only the summaries an `--import-only` run left queued).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.corpus import write_jsonl
from bench.memory import percentile
from bench.report import Report, Table, parse
from bench.scale_import import Run, env_for, run_import, run_measured
from bench.scale_options import FIXED
from bench.scale_probe import Wide
from parla.memory.retrieval.reembed import reembed
from parla.memory.store.sqlite.rows import VECTOR_BYTES
from parla.memory.store.sqlite.store import SQLiteChatStore

OPENINGS = 5


def work_queue(env: dict[str, str]) -> Run:
    """The summaries a big import queued, made as the daemon's worker makes them (`bench.scale_queue`)."""
    return run_measured([sys.executable, "-m", "bench.scale_queue"], env, "the summary queue")


def import_table(title: str) -> Table:
    return Table(
        ["step", "chats", "turns", "s", "turns/s", "CPU s", "turns per CPU s", "peak RSS MB", "load average"],
        title=title,
    )


def import_row(table: Table, step: str, chats: int, turns: int, run: Run) -> None:
    table.row(
        step,
        chats,
        turns,
        f"{run.seconds:.1f}",
        f"{turns / run.seconds:,.0f}",
        f"{run.cpu_s:.1f}",
        f"{turns / run.cpu_s:,.0f}",
        f"{run.peak_mb:.0f}",
        f"{os.getloadavg()[0]:.1f}",
    )


Probed = dict[str, list[float]]


def probe(store: Path, dim: int) -> tuple[Probed, Probed]:
    """OPENINGS fresh processes, each opening the store and searching, alternating with as many
    whose index stages are fixed as before they grew with the store (the baseline)."""
    fixed = {f"PARLA_{key.upper()}": str(value) for key, value in FIXED.items()}
    runs: tuple[Probed, Probed] = ({}, {})
    for opening in range(OPENINGS):
        pair = list(zip(runs, ({}, fixed), strict=True))
        for out, env in pair[:: 1 if opening % 2 else -1]:  # each first in turn
            line = subprocess.run(
                [sys.executable, "-m", "bench.scale_probe", str(store), "--dim", str(dim)],
                check=True,
                capture_output=True,
                text=True,
                env={**os.environ, **env},
            ).stdout
            one = json.loads(line)
            for key, value in (
                ("first_s", [one["first_s"]]),
                ("rss_mb", [one["rss_mb"]]),
                ("load", [os.getloadavg()[0]]),
            ):
                out.setdefault(key, []).extend(value)
            for key in ("switch_ms", "recall_ms"):
                out.setdefault(key, []).extend(one[key])
    return runs


def options(store: Path, dim: int, with_usearch: bool) -> list[dict[str, object]]:
    args = [sys.executable, "-m", "bench.scale_options", str(store), "--dim", str(dim)]
    lines = subprocess.run(
        [*args, *([] if with_usearch else ["--no-usearch"])], check=True, capture_output=True, text=True
    ).stdout
    return [json.loads(line) for line in lines.splitlines() if line.strip()]


def sizes(out: Report, store: Path, turns: int, dim: int, title: str) -> None:
    """Bytes per 1,000 turns: the files, and what takes them."""
    with sqlite3.connect(store) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        tables = dict(db.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name").fetchall())
        vectors = db.execute(
            "SELECT (SELECT count(*) FROM turn_windows) + (SELECT count(*) FROM summaries) "
            "+ (SELECT count(*) FROM facts WHERE embedding IS NOT NULL) "
            "+ (SELECT count(*) FROM chats WHERE summary_embedding IS NOT NULL)"
        ).fetchone()[0]
    fts = sum(v for k, v in tables.items() if k.startswith("turn_words"))
    windows = tables.get("turn_windows", 0) + tables.get("sqlite_autoindex_turn_windows_1", 0)
    turns_b = sum(v for k, v in tables.items() if k.startswith(("turns", "sqlite_autoindex_turns")))
    summaries = tables.get("summaries", 0) + tables.get("facts", 0)
    file = store.stat().st_size
    index = sum(store.with_name(store.name + s).stat().st_size for s in ("-vectors", "-vectors.i8"))
    table = Table(["part", "MB per 1,000 turns"], title=f"{title}: the store's size")
    for name, size in (
        ("turns", turns_b),
        ("word index of the turns (FTS5)", fts),
        ("windows of what was said (text, words, vector)", windows),
        ("summaries and facts", summaries),
        ("other (chats, pins, meta, free pages)", file - turns_b - fts - windows - summaries),
        ("the file", file),
        ("its vectors (half precision), inside the rows above", vectors * dim * VECTOR_BYTES),
        ("the index files beside it", index),
        ("in all", file + index),
    ):
        table.row(name, f"{size * 1000 / turns / 2**20:.2f}")
    out.table(table)


def report(out: Report, name: str, probes: tuple[Probed, Probed], compared: list[dict[str, object]]) -> None:
    probed, before = probes
    first = probed["first_s"]
    searches = Table(["search", "p50 ms", "p95 ms", "load average"], title=name)
    for kind in ("switch", "recall"):
        for label, ran in ((kind, probed), (f"{kind}, index stages fixed as before (baseline)", before)):
            ms = ran[f"{kind}_ms"]
            loads = f"{min(ran['load']):.1f}-{max(ran['load']):.1f}"
            searches.row(label, f"{percentile(ms, 0.5):.1f}", f"{percentile(ms, 0.95):.1f}", loads)
    out.table(searches)
    out.line(
        "p95 against the baseline of the same run: "
        + ", ".join(
            f"{kind} {percentile(probed[f'{kind}_ms'], 0.95) / percentile(before[f'{kind}_ms'], 0.95):.2f}"
            for kind in ("switch", "recall")
        )
        + f"; RSS {max(probed['rss_mb']):.0f} MB against {max(before['rss_mb']):.0f}"
    )
    out.line(
        f"first switch search after opening: p95 over {len(first)} openings {percentile(first, 0.95):.3f} s"
        f" (each: {', '.join(f'{f:.3f}' for f in first)}); RSS after 20 switch + 20 recall searches:"
        f" {max(probed['rss_mb']):.0f} MB"
    )
    table = Table(
        [
            "option",
            "agreement switch",
            "agreement recall",
            "p50 ms",
            "p95 ms",
            "heap B a vector",
            "disk B a vector",
            "built in s",
        ],
        title=f"{name}: vector search options on the same vectors",
    )
    for option in compared:
        table.row(
            str(option["option"]),
            f"{option['agreement_switch']:.3f}",
            f"{option['agreement_recall']:.3f}",
            f"{option['candidates_ms_p50']:.1f}",
            f"{option['candidates_ms_p95']:.1f}",
            str(option["heap_bytes_per_vector"]),
            f"{float(str(option['disk_bytes_per_vector'])):.0f}",
            str(option["build_s"]),
        )
    out.table(table)


async def widen(source: Path, target: Path) -> None:
    """The store re-embedded by the 768-dim stand-in."""
    for suffix in ("", "-wal", "-shm"):
        if source.with_name(source.name + suffix).exists():
            shutil.copy(source.with_name(source.name + suffix), target.with_name(target.name + suffix))
    async with SQLiteChatStore(target) as store:
        await reembed(store, Wide(), 512)


def build(folder: Path, chats: int, import_only: bool, foreground: bool) -> tuple[Path, int, Table]:
    """The store of `chats` chats in `folder`, and its build's table. `built-N.json`, written when
    a step ends, lets a later run start from there: a store imported before is not imported again,
    and one whose summaries were made (not `--import-only`) is measured as it is."""
    store = folder / f"store-{chats}.db"
    done = folder / f"built-{chats}.json"
    env = env_for(store, folder / "home")
    imports = import_table(f"{chats:,} chats: `parla import` (offline embedder and summarizer)")
    if done.exists():
        built = json.loads(done.read_text())
        turns = built["turns"]
        imports.row(f"imported by an earlier run into {folder}", chats, turns, *[""] * 6)
    else:
        for path in folder.glob(f"store-{chats}*"):
            path.unlink()
        jsonl = write_jsonl(folder / f"corpus-{chats}.jsonl", chats)
        turns = sum(len(json.loads(line)["turns"]) for line in jsonl.open())
        import_row(imports, "parla import (summaries queued)", chats, turns, run_import(jsonl, env))
        if foreground:
            here = folder / f"store-{chats}-here.db"
            run = run_import(jsonl, env_for(here, folder / "home"), "--offline")
            import_row(imports, "parla import --offline (summaries made here)", chats, turns, run)
            for path in folder.glob(f"store-{chats}-here*"):
                path.unlink()
        jsonl.unlink()
        built = {"turns": turns, "summaries": False}
        done.write_text(json.dumps(built))
    if not import_only and not built["summaries"]:
        import_row(imports, "the daemon's worker makes the queued summaries", chats, turns, work_queue(env))
        done.write_text(json.dumps({"turns": turns, "summaries": True}))
    return store, turns, imports


def measure(
    out: Report, folder: Path, chats: int, with_usearch: bool, import_only: bool, foreground: bool, wide: bool
) -> None:
    store, turns, imports = build(folder, chats, import_only, foreground)
    out.table(imports)
    made = " (summaries not made: --import-only)" if import_only else ""
    sizes(out, store, turns, 256, f"{chats:,} chats, 256 dims{made}")
    if import_only:
        return
    report(out, f"{chats:,} chats, offline embedder, 256 dims", probe(store, 256), options(store, 256, with_usearch))
    if not wide:
        return
    widened = folder / f"store-{chats}-768.db"
    made = folder / f"store-{chats}-768.built"  # removed with the store it was made from
    if not made.exists():
        asyncio.run(widen(store, widened))
        made.touch()
    report(out, f"{chats:,} chats, 768-dim stand-in", probe(widened, 768), options(widened, 768, with_usearch))
    sizes(out, widened, turns, 768, f"{chats:,} chats, 768-dim stand-in")


def main(
    out: Report,
    chat_counts: list[int],
    with_usearch: bool,
    import_only: bool,
    foreground: bool,
    keep: Path | None,
    wide: bool,
) -> None:
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        for chats in chat_counts:
            measure(out, keep, chats, with_usearch, import_only, foreground, wide)
        return
    with tempfile.TemporaryDirectory() as tmp:
        for chats in chat_counts:
            measure(out, Path(tmp), chats, with_usearch, import_only, foreground, wide)
            for path in Path(tmp).glob(f"store-{chats}*"):
                path.unlink()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="500 chats only")
    size.add_argument("--big", action="store_true", help="20,000 chats too")
    size.add_argument("--chats", type=int, action="append", help="these sizes instead (repeat it)")
    parser.add_argument("--no-usearch", action="store_true", help="leave usearch out of the options")
    parser.add_argument(
        "--import-only",
        action="store_true",
        help="the import and the store's size: no summaries made from the queue, no searches",
    )
    parser.add_argument(
        "--foreground", action="store_true", help="also `parla import --offline` (summaries made by the import)"
    )
    parser.add_argument("--no-wide", action="store_true", help="256 dims only: no 768-dim stand-in")
    parser.add_argument(
        "--keep",
        type=Path,
        metavar="FOLDER",
        help="build the stores into FOLDER and keep them; a store an earlier run built there is measured again "
        "without its import",
    )
    parser.add_argument(
        "--store",
        choices=("sqlite", "supabase"),
        default="sqlite",
        help="supabase: the Postgres peer (bench.scale_supabase)",
    )
    args, out = parse(parser)
    counts = args.chats or ([500] if args.quick else [500, 5000, 20000] if args.big else [500, 5000])
    if args.store == "supabase":
        from bench.scale_supabase import run

        for chats in counts:
            # beyond 500 chats `parla import` through the API would take hours here: the history is
            # imported into SQLite and copied (bench.supabase_load), and 100 chats go through the API
            asyncio.run(run(out, chats) if chats <= 500 else run(out, chats, "copy", api_chats=100))
    else:
        main(out, counts, not args.no_usearch, args.import_only, args.foreground, args.keep, not args.no_wide)
