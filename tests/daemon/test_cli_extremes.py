"""The `parla` script on what a hostile file, an odd time zone or a full disk gives it: one
clear line and an exit code, never a traceback. Run as a process, as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from parla.memory.store.sqlite.store import SQLiteChatStore
from parla.records.turn import Turn

pytestmark = pytest.mark.tier("process")


def _parla(
    tmp_path: Path, *args: str, stdout: object = subprocess.PIPE, tz: str = "UTC"
) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PARLA_STORE_PATH": str(tmp_path / "parla.db"),
        "PARLA_CONFIG_FILE": str(tmp_path / "none.toml"),
        "PARLA_CONTROL_SOCKET": str(tmp_path / "ctl.sock"),
        "TZ": tz,
    }
    return subprocess.run(
        [sys.executable, "-m", "parla.daemon", *args],
        check=False,
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        timeout=120,
    )


def _chat(n: int, **fields: object) -> str:
    return json.dumps({"id": f"c{n}", **fields, "turns": [{"role": "user", "text": f"hello {n}"}]})


def test_out_of_range_dates_and_deep_nesting_skip_their_line_only(tmp_path):
    # 9999-12-31 aborted the import with an OverflowError, 100,000 "[" with a RecursionError,
    # and the lines after them were never imported (issue 25, items 11 and 12)
    lines = [
        _chat(1),
        _chat(2, created_at="9999-12-31T23:59:59"),
        "[" * 100_000,
        _chat(3, created_at="0001-01-01T00:00:00"),
        _chat(4),
    ]
    (tmp_path / "chats.jsonl").write_text("\n".join(lines) + "\n")
    done = _parla(tmp_path, "-q", "import", str(tmp_path / "chats.jsonl"), "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["imported"] == 2 and [s["line"] for s in report["skipped"]] == [2, 3, 4]
    assert "out of range" in report["skipped"][0]["reason"] and "nested too deeply" in report["skipped"][1]["reason"]
    assert "Traceback" not in done.stderr


async def test_a_chat_from_year_one_is_listed_and_exported_west_of_greenwich(tmp_path):
    # a chat stored as made on 0001-01-01 (by an import before dates were checked) crashed
    # `chats` and `export --all` in New York every time (issue 25, item 11)
    year_one = datetime(1, 1, 1, tzinfo=UTC)
    async with SQLiteChatStore(tmp_path / "parla.db") as store:
        turn = Turn.of("user", "an old one").model_copy(update={"created_at": year_one})
        await store.create_chat(title="Old", created_at=year_one, turns=[turn])
    for args in (["chats"], ["export", "--all"], ["export", "--all", "--format", "jsonl"]):
        done = _parla(tmp_path, *args, tz="America/New_York")
        assert done.returncode == 0 and "0001-01-01" in done.stdout, done.stderr


@pytest.mark.parametrize(
    "args", [["chats"], ["export", "--all"], ["--help"], [], ["--version"], ["config", "path"], ["chats", "--help"]]
)
def test_a_full_disk_is_one_error_line(tmp_path, args):
    # `> /dev/full` printed a traceback (issue 25, item 15); the help, the version and commands
    # without the command wrapper still did (issue 42, item 11)
    (tmp_path / "chats.jsonl").write_text("\n".join(_chat(n) for n in range(30)) + "\n")
    assert _parla(tmp_path, "-q", "import", str(tmp_path / "chats.jsonl")).returncode == 0
    with open("/dev/full", "w") as full:
        done = _parla(tmp_path, *args, stdout=full)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == ["parla: error: cannot write to stdout: No space left on device"]
