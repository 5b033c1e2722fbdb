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

from parla.memory.store.sqlite import SQLiteChatStore

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
