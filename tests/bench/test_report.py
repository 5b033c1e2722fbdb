"""A benchmark's `--markdown` output is what docs/design/ pastes: a header naming the date, the
machine and the command, then Markdown tables (each row as many cells as the header row)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bench.report import Table

pytestmark = pytest.mark.tier("fast")

ROOT = Path(__file__).resolve().parents[2]


def tables(markdown: str) -> list[list[list[str]]]:
    """The Markdown tables in a text: runs of lines that start and end with `|`, as cells."""
    found: list[list[list[str]]] = []
    current: list[list[str]] = []
    for line in [*markdown.splitlines(), ""]:
        if line.startswith("|") and line.endswith("|"):
            current.append([c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]])
        elif current:
            found.append(current)
            current = []
    return found


@pytest.mark.tier("process")
def test_auto_pins_prints_a_markdown_table_under_a_header_with_date_machine_and_command():
    done = subprocess.run(
        [sys.executable, "-m", "bench.auto_pins", "--markdown"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    first, *rest = done.stdout.splitlines()
    assert re.fullmatch(
        r"\*\d{4}-\d\d-\d\d \d\d:\d\d UTC; .+, \d+ cores \(load average [\d.]+\); .+; Python 3\.\d+\.\d+;"
        r" `(nice -n \d+ )?python -m bench\.auto_pins --markdown`\*",  # a run under nice says so
        first,
    ), first
    (table,) = tables("\n".join(rest))
    header, rule, *rows = table
    assert header[:1] == ["offline auto-pin detector"] and "precision" in header
    assert all(re.fullmatch(r":?-{3,}:?", cell) for cell in rule) and len(rule) == len(header)
    assert rows and all(len(row) == len(header) for row in rows)
    assert re.fullmatch(r"[01]\.\d\d", rows[0][header.index("precision")])


def test_a_table_is_aligned_text_or_markdown_with_pipes_escaped():
    table = Table(["case", "p50 ms", "n"], title="latency")
    table.row("a | b", "1.25", 1200)
    table.row("longer case", "12.50", 3)
    assert table.text().splitlines() == [
        "latency",
        "case         p50 ms      n",
        "a | b          1.25  1,200",
        "longer case   12.50      3",
    ]
    assert table.markdown().splitlines() == [
        "**latency**",
        "",
        "| case | p50 ms | n |",
        "|:---|---:|---:|",
        "| a \\| b | 1.25 | 1,200 |",
        "| longer case | 12.50 | 3 |",
    ]
    assert tables(table.markdown())[0][2] == ["a \\| b", "1.25", "1,200"]
