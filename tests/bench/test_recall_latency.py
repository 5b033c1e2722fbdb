"""`bench.recall_latency --store` times recall in fresh processes on a copy of a store: its
Markdown table has a row for each state of the process's heap and the word figures, and the
store itself is never written."""

from __future__ import annotations

import asyncio
import hashlib
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from bench.memory import CONFIG, populate
from parla.memory.retrieval.turn_windows import WindowIndexer
from parla.memory.store.sqlite.store import SQLiteChatStore
from tests.bench.test_report import ROOT, tables

pytestmark = pytest.mark.tier("process")


def _digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


async def test_a_store_is_timed_in_fresh_processes_on_a_copy(tmp_path, embedder):
    folder = tmp_path / "store"
    folder.mkdir(mode=0o700)
    async with SQLiteChatStore(folder / "parla.db") as store:
        await populate(store, 0, 12, random.Random(3), turns=8)
        await WindowIndexer(store, embedder, CONFIG.search_window_turns).index_every_chat()
    before = _digests(folder)
    done = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "bench.recall_latency", "--store", str(folder / "parla.db")]
        + ["--processes", "1", "--queries", "2", "--markdown"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    (table,) = tables(done.stdout)
    header, _, *rows = table
    assert [row[0] for row in rows] == [
        "heap settled as the daemon's, word figures kept",
        "heap as before, word figures kept (baseline)",
        "heap as before, word figures dropped",
    ]
    assert all(len(row) == len(header) for row in rows) and "recall p95 ms" in header
    assert "settled / before, p95: wall" in done.stdout
    assert _digests(folder) == before
