"""What a benchmark prints: a header line (date in UTC, machine, the exact command) and its tables,
as aligned text for a terminal or, with `--markdown`, as Markdown to paste into docs/design/.

    parser = argparse.ArgumentParser(description=__doc__)
    args, out = parse(parser)            # adds --markdown, prints the header
    table = Table(["turns", "p50 ms"], title="append latency")
    table.row(10, f"{p50:.2f}")
    out.table(table)
    out.line("free text: a paragraph in Markdown, a line in a terminal")
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path


def cpu_model() -> str:
    """The CPU's name as the kernel reports it (Linux); what the platform module knows elsewhere."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def operating_system() -> str:
    try:
        name = platform.freedesktop_os_release().get("PRETTY_NAME", "")
    except OSError:
        name = ""
    return f"{name}, kernel {platform.release()}" if name else f"{platform.system()} {platform.release()}"


def command(argv: Sequence[str] | None = None) -> str:
    """The command as typed: `python -m bench.NAME ARGS`, with the `nice` it ran under."""
    args = list(sys.argv[1:] if argv is None else argv)
    spec = getattr(sys.modules["__main__"], "__spec__", None)
    module = spec.name if spec is not None else Path(sys.argv[0]).stem
    niceness = os.nice(0) if hasattr(os, "nice") else 0
    prefix = f"nice -n {niceness} " if niceness > 0 else ""
    return f"{prefix}python -m {module}" + (f" {shlex.join(args)}" if args else "")


def header(cmd: str) -> str:
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    return (
        f"{when}; {cpu_model()}, {os.cpu_count()} cores (load average {load:.1f}); "
        f"{operating_system()}; Python {platform.python_version()}; `{cmd}`"
    )


def _cell(value: object) -> str:
    return value if isinstance(value, str) else f"{value:,}" if isinstance(value, int) else str(value)


@dataclass
class Table:
    """Rows of cells under column names; the first column names the row (left-aligned), the
    others hold figures (right-aligned)."""

    columns: Sequence[str]
    title: str = ""
    rows: list[list[str]] = field(default_factory=list)

    def row(self, *cells: object) -> None:
        if len(cells) != len(self.columns):
            raise ValueError(f"{len(cells)} cells for {len(self.columns)} columns")
        self.rows.append([_cell(c) for c in cells])

    def text(self) -> str:
        widths = [max(len(r[i]) for r in [list(self.columns), *self.rows]) for i in range(len(self.columns))]

        def line(cells: Sequence[str]) -> str:
            first, *rest = cells
            return "  ".join([first.ljust(widths[0]), *(c.rjust(w) for c, w in zip(rest, widths[1:], strict=True))])

        lines = [line(self.columns), *(line(r) for r in self.rows)]
        return "\n".join(([self.title] if self.title else []) + [x.rstrip() for x in lines])

    def markdown(self) -> str:
        def line(cells: Sequence[str]) -> str:
            return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

        rule = "|" + "|".join([":---", *("---:" for _ in self.columns[1:])]) + "|"
        lines = [line(self.columns), rule, *(line(r) for r in self.rows)]
        return "\n".join(([f"**{self.title}**", ""] if self.title else []) + lines)


class Report:
    """Where a benchmark's output goes: stdout, as text or as Markdown."""

    def __init__(self, markdown: bool) -> None:
        self.markdown = markdown

    def start(self, cmd: str | None = None) -> None:
        first = header(cmd or command())
        print(f"*{first}*\n" if self.markdown else first, flush=True)

    def table(self, table: Table) -> None:
        print((table.markdown() if self.markdown else table.text()) + "\n", flush=True)

    def line(self, text: str = "") -> None:
        """A line of prose or a figure alone; a paragraph of its own in Markdown."""
        if self.markdown and text:
            print(text + "\n", flush=True)
        elif not self.markdown:
            print(text, flush=True)


def add_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--markdown", action="store_true", help="print the tables as Markdown under a header (date, machine, command)"
    )


def parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None = None) -> tuple[argparse.Namespace, Report]:
    """Adds `--markdown`, parses the command line and prints the header line."""
    add_flag(parser)
    args = parser.parse_args(argv)
    out = Report(args.markdown)
    out.start(command(argv))
    return args, out
