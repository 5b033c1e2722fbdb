"""Import benchmark: `python -m bench.imports [--conversations N] [--quick]`. Prints its figures;
asserts nothing.

Writes a synthetic ChatGPT data export in its real shape (`conversations.json`: a tree of nodes per
conversation with the hidden system node, a regenerated answer now and then, ChatGPT's metadata
and answers of several paragraphs; by default 2,000 conversations, about 150 MB), then runs
`parla import` on it as a user would (its own process, offline: extractive summarizer and offline
embedder, a fresh SQLite store) and reports the wall time, turns per second and the process's peak
RSS; then the same import again (what a re-run after Ctrl-C does: everything is already there)."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.corpus import chat_record
from bench.report import Report, Table, add_flag

ROOT = Path(__file__).resolve().parents[1]


def _node(node_id: str, parent: str | None, role: str, text: str, at: float, slug: str | None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"model_slug": slug, "finish_details": {"type": "stop"}} if slug else {}
    return {
        "id": node_id,
        "message": {
            "id": node_id,
            "author": {"role": role, "name": None, "metadata": {}},
            "create_time": at,
            "update_time": None,
            "content": {"content_type": "text", "parts": [text]},
            "status": "finished_successfully",
            "end_turn": role == "assistant" or None,
            "weight": 1.0,
            "metadata": {"is_visually_hidden_from_conversation": True} if role == "system" else metadata,
            "recipient": "all",
            "channel": None,
        },
        "parent": parent,
        "children": [],
    }


def conversation(rng: random.Random, index: int, turns: int, start: datetime) -> dict[str, Any]:
    record = chat_record(rng, index, turns, start)
    mapping: dict[str, Any] = {"root": {"id": "root", "message": None, "parent": None, "children": []}}
    parent = "root"
    for n, turn in enumerate([{"role": "system", "text": ""}, *record["turns"]]):
        role = {"user": "user", "model": "assistant"}.get(turn["role"], "system")
        text = turn["text"]
        if role == "assistant":  # ChatGPT answers at length: several paragraphs
            text = "\n\n".join([text] + [chat_record(rng, 0, 2, start)["turns"][1]["text"] * 2 for _ in range(8)])
        at = start.timestamp() + 60 * n
        node = _node(f"{index}-{n}", parent, role, text, at, "gpt-4o" if role == "assistant" else None)
        mapping[parent]["children"].append(node["id"])
        if role == "assistant" and rng.random() < 0.1:  # an answer the user regenerated
            old = _node(f"{index}-{n}-old", parent, role, text[:400], at - 30, "gpt-4o")
            mapping[parent]["children"].insert(0, old["id"])
            mapping[old["id"]] = old
        mapping[node["id"]] = node
        parent = node["id"]
    return {
        "title": f"Synthetic chat {index}",
        "create_time": start.timestamp(),
        "update_time": start.timestamp() + 60 * turns,
        "mapping": mapping,
        "moderation_results": [],
        "current_node": parent,
        "conversation_id": f"bench-{index:05d}",
        "is_archived": False,
        "default_model_slug": "gpt-4o",
        "id": f"bench-{index:05d}",
    }


def write_export(path: Path, conversations: int, seed: int = 11) -> int:
    """The export, written one conversation at a time; the number of turns it holds."""
    rng = random.Random(seed)
    start = datetime(2025, 1, 1, tzinfo=UTC)
    turns = 0
    with path.open("w", encoding="utf-8") as f:
        f.write("[")
        for i in range(conversations):
            count = rng.randint(10, 50)
            turns += count
            f.write(("," if i else "") + json.dumps(conversation(rng, i, count, start + timedelta(hours=5 * i))))
        f.write("]")
    return turns


def run_child(args: list[str], folder: Path) -> tuple[float, float, dict[str, Any]]:
    """`python ARGS` in its own process on the folder's store: wall seconds, its peak RSS in MB and
    the JSON it printed."""
    env = {
        **os.environ,
        "PARLA_STORE_PATH": str(folder / "parla.db"),
        "PARLA_CONFIG_FILE": str(folder / "none.toml"),
        "PARLA_CONTROL_SOCKET": str(folder / "ctl.sock"),
        "PYTHONPATH": str(ROOT),
    }
    for key in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "PARLA_GEMINI_API_KEY"):
        env.pop(key, None)
    started = time.perf_counter()
    with (folder / "out.json").open("w") as out, (folder / "err.txt").open("w") as err:
        child = subprocess.Popen([sys.executable, *args], stdout=out, stderr=err, env=env)
        # wait4 gives this child's own peak RSS (RUSAGE_CHILDREN would keep the largest of all runs)
        _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    if status != 0:
        raise SystemExit(f"{args} failed: {(folder / 'err.txt').read_text()[-2000:]}")
    return wall, usage.ru_maxrss / 1024, json.loads((folder / "out.json").read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--conversations", type=int, default=2000)
    parser.add_argument("--quick", action="store_true", help="100 conversations: a smoke run")
    parser.add_argument("--store-only", metavar="FILE", help=argparse.SUPPRESS)  # the child of the first run
    add_flag(parser)
    args = parser.parse_args()
    if args.store_only:
        print(json.dumps(asyncio.run(store_only(args.store_only))))
        return
    out = Report(args.markdown)
    out.start()
    count = 100 if args.quick else args.conversations
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        source = folder / "conversations.json"
        turns = write_export(source, count)
        size = source.stat().st_size / 1e6
        table = Table(
            ["run", "s", "turns/s", "peak RSS MB", "imported", "unchanged", "not summarised"],
            title=f"synthetic ChatGPT export: {count:,} conversations, {turns:,} turns, {size:.0f} MB"
            f" (ijson backend {_backend()})",
        )
        runs = {
            "read and store only": ["-m", "bench.imports", "--store-only", str(source)],
            "parla import": ["-m", "parla.daemon", "-q", "import", str(source), "--json"],
            "parla import again": ["-m", "parla.daemon", "-q", "import", str(source), "--json"],
        }
        for run, child in runs.items():
            wall, rss, report = run_child(child, folder)
            if run == "read and store only":  # the next run imports into a store of its own
                (folder / "parla.db").unlink()
            table.row(
                run,
                f"{wall:.1f}",
                f"{turns / wall:.0f}",
                f"{rss:.0f}",
                report["imported"],
                report["unchanged"],
                len(report.get("not_summarised", [])),
            )
        out.table(table)


async def store_only(source: str) -> dict[str, int]:
    """What `parla import` does before summarising: read the export and store each chat (turns and
    their windows) in the SQLite store the environment names."""
    from parla.daemon.settings_sources import load
    from parla.memory.imports.importer import import_chat
    from parla.memory.imports.reading import Export
    from parla.memory.store.sqlite.store import SQLiteChatStore

    outcomes: Counter[str] = Counter()
    async with SQLiteChatStore(load().store_path) as store:
        with Export(source) as export:
            for entry in export.chats():
                if isinstance(entry, tuple):
                    outcomes[(await import_chat(store, entry[1])).outcome] += 1
    return {"imported": outcomes["imported"], "unchanged": outcomes["unchanged"]}


def _backend() -> str:
    import ijson

    return str(ijson.backend)


if __name__ == "__main__":
    main()
