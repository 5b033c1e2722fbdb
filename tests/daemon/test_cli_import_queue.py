"""A big import with a Gemini key (issue 26, item 2): what was said is stored and searchable at
once; the summaries' cost in calls and tokens is said before any is made, and they are queued only
when the user agrees (--yes); --offline makes them here with the offline models; a small import is
summarised at once as before. Through the CLI, Gemini being the REST emulator."""

from __future__ import annotations

import asyncio
import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from parla.daemon.memory_services import open_memory
from parla.daemon.settings import Settings
from parla.memory.store.sqlite.store import SQLiteChatStore
from tests.conftest import eventually

pytestmark = pytest.mark.tier("fast")

TOPICS = ["sourdough starter", "the Lisbon trip", "a python bug in the CSV exporter", "mom's birthday", "guitar"]


@pytest.fixture
def export(tmp_path):
    lines = []
    for n, topic in enumerate(TOPICS):
        turns = [
            {"role": "user" if i % 2 == 0 else "model", "text": f"Turn {i} about {topic}: detail number {i}."}
            for i in range(24)
        ]
        lines.append(json.dumps({"id": f"chat-{n}", "title": topic.capitalize(), "turns": turns}))
    path = tmp_path / "history.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def with_gemini(parla, monkeypatch, gemini):
    monkeypatch.setenv("GEMINI_API_KEY", gemini.api_key)
    monkeypatch.setenv("PARLA_GEMINI_BASE_URL", gemini.base_url)
    monkeypatch.setenv("PARLA_EMBEDDER", "offline")  # the summaries are what is counted here
    monkeypatch.setenv("PARLA_IMPORT_CONFIRM_CALLS", "10")  # these five chats are a "big" import
    return parla


def _queued(tmp_path) -> int:
    async def read() -> int:
        async with SQLiteChatStore(tmp_path / "parla.db") as store:
            return (await store.summary_queue()).waiting

    return asyncio.run(read())


def test_a_big_import_says_what_summaries_cost_and_queues_nothing_unasked(with_gemini, export, gemini, tmp_path):
    asked = with_gemini("import", str(export), "--json")
    report = json.loads(asked.stdout)
    assert report["imported"] == 5 and report["summaries"]["state"] == "not queued"
    assert report["summaries"]["calls"] == 5 * 6  # two chunks a chat: summary, facts, pins each
    assert "takes about 30 Gemini calls" in asked.stderr and "--yes" in asked.stderr
    assert gemini.calls(":generateContent") == [] and _queued(tmp_path) == 0
    # what was said is searchable already
    found = json.loads(with_gemini("search", "the bug in the csv exporter", "--json").stdout)
    assert found["decision"] == "switch" and found["candidates"][0]["title"] == "A python bug in the csv exporter"
    agreed = json.loads(with_gemini("import", str(export), "--yes", "--json").stdout)  # the same file again
    assert agreed["unchanged"] == 5 and agreed["summaries"]["state"] == "queued"
    assert _queued(tmp_path) == 5 and gemini.calls(":generateContent") == []


def test_offline_summarises_here_without_gemini(with_gemini, export, gemini):
    report = json.loads(with_gemini("import", str(export), "--offline", "--json").stdout)
    assert report["summaries"] == {"by": "offline", "state": "done"} and report["not_summarised"] == []
    assert gemini.calls(":generateContent") == []
    shown = json.loads(with_gemini("show", "chat-0", "--json").stdout)
    assert shown["chat"]["summary_text"] and len(shown["summaries"]) == 2


def test_a_small_import_is_summarised_at_once(with_gemini, export, gemini, monkeypatch):
    monkeypatch.setenv("PARLA_IMPORT_CONFIRM_CALLS", "100")
    report = json.loads(with_gemini("import", str(export), "--json").stdout)
    assert report["summaries"]["state"] == "done" and report["summaries"]["calls"] == 30
    assert len(gemini.calls(":generateContent")) == 30


@pytest.mark.tier("process")
def test_on_a_terminal_the_import_asks_before_queueing(with_gemini, export, gemini, tmp_path):
    """A pseudo-terminal answers the question: `y` queues the summaries, none made here."""
    main, terminal = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    with open(main, "wb", buffering=0) as keyboard:
        keyboard.write(b"y\n")
        command = [sys.executable, "-m", "parla.daemon", "import", str(export)]
        done = subprocess.run(
            command, stdin=terminal, capture_output=True, text=True, env=env, timeout=120, check=False
        )
    os.close(terminal)
    assert done.returncode == 0, done.stderr
    assert "takes about 30 Gemini calls" in done.stderr and "Queue them?" in done.stderr and ": queued." in done.stderr
    assert _queued(tmp_path) == 5 and gemini.calls(":generateContent") == []


def test_a_big_offline_import_is_queued_and_the_worker_leaves_it_as_offline_does(parla, export, tmp_path, monkeypatch):
    """With the offline summarizer a big import stores and indexes what was said and queues the
    summaries; once the daemon's worker has worked the queue every chat holds what `--offline`
    makes here (the same summaries, facts and the dates read in them)."""
    said = [
        {
            "role": "user" if i % 2 == 0 else "model",
            "text": f"My sister's wedding is next Saturday, I booked {i} rooms."
            if i % 2 == 0
            else f"Noted {i}: book the train by Friday.",
            "created_at": f"2026-03-04T10:{i:02d}:00+00:00",
        }
        for i in range(12)
    ]
    with export.open("a") as f:
        f.write(json.dumps({"id": "chat-5", "title": "Wedding", "turns": said}) + "\n")
    monkeypatch.setenv("PARLA_SUMMARIZER", "offline")
    monkeypatch.setenv("PARLA_EMBEDDER", "offline")
    monkeypatch.setenv("PARLA_TIME_ZONE", "UTC")
    monkeypatch.setenv("PARLA_IMPORT_OFFLINE_NOW_TURNS", "100")  # these six chats hold 132 turns
    report = json.loads(parla("import", str(export), "--json").stdout)
    assert report["summaries"] == {"by": "offline", "chats": 6, "state": "queued"}
    assert report["not_summarised"] == [] and _queued(tmp_path) == 6
    found = json.loads(parla("search", "the bug in the csv exporter", "--json").stdout)
    assert found["candidates"][0]["title"] == "A python bug in the csv exporter"  # searchable before summaries
    assert not json.loads(parla("show", "chat-0", "--json").stdout)["summaries"]

    asyncio.run(_work_the_queue(Settings()))
    queued = {n: _compacted(parla, f"chat-{n}") for n in range(len(TOPICS) + 1)}
    assert "next Saturday (Saturday 7 March 2026)" in str(queued[5]["facts"])
    monkeypatch.setenv("PARLA_STORE_PATH", str(tmp_path / "here.db"))
    here = json.loads(parla("import", str(export), "--offline", "--json").stdout)
    assert here["summaries"] == {"by": "offline", "state": "done"}
    for n, compacted in queued.items():
        assert compacted["summary_text"] and compacted == _compacted(parla, f"chat-{n}")


def test_a_small_offline_import_is_summarised_at_once(parla, export, monkeypatch):
    monkeypatch.setenv("PARLA_SUMMARIZER", "offline")
    monkeypatch.setenv("PARLA_EMBEDDER", "offline")
    report = json.loads(parla("import", str(export), "--json").stdout)
    assert report["summaries"] == {"by": "offline", "state": "done"}
    assert json.loads(parla("show", "chat-0", "--json").stdout)["chat"]["summary_text"]


async def _work_the_queue(settings: Settings) -> None:
    async with open_memory(settings) as mem, mem.summary_worker as worker:

        async def emptied() -> bool:
            return (await mem.store.summary_queue()).waiting == 0 and worker.progress.current is None

        await eventually(emptied, timeout=60, what="the queue worked")


def _compacted(parla, chat: str) -> dict:
    shown = json.loads(parla("show", chat, "--json").stdout)
    return {
        "summary_text": shown["chat"]["summary_text"],
        "summaries": [(s["level"], s["range"], s["text"]) for s in shown["summaries"]],
        "facts": [(f["range"], f["lines"]) for f in shown["facts"]],
        "pins": sorted(p["content"] for p in shown["pins"]),
    }
