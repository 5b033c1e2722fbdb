"""No `asyncio.wait_for` in the product, the benchmarks or the peers: on Python 3.11, when what it
waits for finishes in the same turn of the loop as a cancellation arrives, it returns the result and
the cancellation is lost, so an owner's stop or a timeout around a loop (it fires once) never ends
the loop. `async with asyncio.timeout(...)` has no such window (parla/kernel/tasks.py says more;
tests/daemon/test_control.py, test_reminders.py and tests/memory/compaction/test_summary_queue.py
provoke the race). A failure names the file and the line."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.test_layers import ROOT, find_modules

pytestmark = pytest.mark.tier("fast")

PEERS = ROOT / "tests" / "peers"


def wait_for_calls(path: Path) -> list[int]:
    """The lines of `path` that call or import asyncio's wait_for."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute) and node.attr == "wait_for":
            if isinstance(node.value, ast.Name) and node.value.id == "asyncio":
                lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module == "asyncio":
            lines += [node.lineno for alias in node.names if alias.name == "wait_for"]
    return lines


def test_no_wait_for_in_the_product_the_benchmarks_or_the_peers() -> None:
    files = [m.path for m in find_modules(ROOT).values()] + sorted(PEERS.rglob("*.py"))
    found = [f"{path.relative_to(ROOT)}:{line}" for path in files for line in wait_for_calls(path)]
    assert not found, "asyncio.wait_for loses a cancellation on Python 3.11; use asyncio.timeout: " + ", ".join(found)


def test_the_check_finds_a_wait_for(tmp_path) -> None:
    source = tmp_path / "waits.py"
    source.write_text(
        "import asyncio\nfrom asyncio import wait_for\n\nasync def f(e):\n    await asyncio.wait_for(e.wait(), 1)\n"
    )
    assert wait_for_calls(source) == [2, 5]
