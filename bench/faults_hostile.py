"""The hostile-import scenario of `python -m bench.faults --scenario hostile`: the files issue 42
found taking `parla import` (and the machine) down, each given to it in its own process held to
3 GB of address space and killed past its time, with its peak RSS from the kernel. A case passes
when the import ends in time, with the outcome it should have, within 100 MB (200 for what is
stored and summarised) of an ordinary export's import in the same run:

- 100,000 `[` then 100,000 `]` (200 KB): the conversation refused, in seconds;
- a 1 MB zip whose `conversations.json` expands to 1 GiB holding one 1 GiB turn: stored, cut;
- a 200 MB export holding one 200 MB user turn: stored, cut;
- 62 MB of 638,049 tiny messages: the conversation refused (import_max_conversation_turns), within
  1.9 GB of the ordinary import: it is read whole before its turns are counted (about 1.2 GB), and
  stored it took more than 3 GB;
- a branch of 200,000 messages: every turn stored, in time. Its memory is shown, not bounded: it is
  a real conversation within import_max_conversation_mb, stored in one transaction, and its cost
  grows with its length (docs/guides/importing.md, Limits)."""

from __future__ import annotations

import asyncio
import json
import random
from dataclasses import dataclass
from pathlib import Path

from bench.faults_checks import Figures, stored_turns
from bench.import_bounds import (
    IMPORT,
    Run,
    run_child,
    turn_text,
    write_branch,
    write_expanding_zip,
    write_tiny_messages,
)
from bench.imports import write_export

ADDRESS_SPACE = 3 << 30
EXTRA_MB = 100


@dataclass
class HostileFigures(Figures):
    failed_cases: int = 0  # killed, past their memory limit, or not the outcome they should have

    @property
    def ok(self) -> bool:
        return super().ok and not self.failed_cases


@dataclass(frozen=True)
class Case:
    name: str
    write: str  # the writer below
    timeout: float
    extra_mb: float | None  # None: shown, not bounded
    refused: str  # when given: the import ends with its only conversation skipped for this (exit 1)


CASES = [
    Case("nested 100,000 deep (200 KB)", "deep", 30, EXTRA_MB, refused="nested more than"),
    Case("1 MB zip, a 1 GiB turn", "bomb", 180, 2 * EXTRA_MB, refused=""),
    Case("200 MB export, a 200 MB turn", "huge", 180, 2 * EXTRA_MB, refused=""),
    # what reading 62 MB of tiny messages takes is bounded by the file's size, not by 100 MB
    Case("62 MB of tiny messages", "tiny", 180, 1900, refused="more than import_max_conversation_turns"),
    Case("a branch of 200,000 messages", "branch", 600, None, refused=""),
]


def _deep(folder: Path) -> Path:
    path = folder / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    return path


def _bomb(folder: Path) -> Path:
    path = folder / "chatgpt-export.zip"
    write_expanding_zip(path, compresslevel=9)
    return path


def _huge(folder: Path) -> Path:
    path = folder / "conversations.json"
    write_branch(path, iter([("user", turn_text(200, run_on=False)), ("assistant", "Noted.")]))
    return path


def _branch(folder: Path) -> Path:
    path = folder / "conversations.json"
    said = ((("user", "assistant")[n % 2], f"Message {n} of a long chat, in a few words.") for n in range(200_000))
    write_branch(path, said)
    return path


def _tiny(folder: Path) -> Path:
    path = folder / "conversations.json"
    write_tiny_messages(path, 62_000_000)
    return path


WRITERS = {"deep": _deep, "bomb": _bomb, "huge": _huge, "tiny": _tiny, "branch": _branch}


def _outcome(case: Case, run: Run, folder: Path) -> tuple[str, bool]:
    """What the import did, and whether it is what it should have done."""
    if run.killed:
        return "killed", False
    if case.refused:
        said = next((line for line in run.stderr.splitlines() if "skipped" in line), run.stderr[-200:])
        return said.strip(), run.returncode == 1 and case.refused in said
    if run.returncode:
        return f"exit {run.returncode}: {run.stderr[-300:]}", False
    report = json.loads(run.stdout)
    turns = sum(len(t) for t in stored_turns(folder / "parla.db").values())
    notes = "; ".join(n["note"] for n in report["notes"])[:300]
    said = f"imported {report['imported']}, {turns:,} turns stored" + (f" ({notes})" if notes else "")
    return said, report["imported"] == 1


def _run(folder: Path, figures: HostileFigures) -> None:
    ordinary = folder / "ordinary.json"
    write_export(ordinary, 20, seed=random.Random(4).randint(0, 10**6))
    base = run_child([*IMPORT, str(ordinary), "--json"], folder, 300, ADDRESS_SPACE)
    figures.runs += 1
    if base.returncode:
        figures.failed_cases += 1
        figures.problem(f"the ordinary import failed: {base.stderr[-300:]}")
        return
    figures.note = f"an ordinary export (20 conversations): {base.seconds:.1f} s, peak RSS {base.peak_mb:.0f} MB"
    for case in CASES:
        source = WRITERS[case.write](folder)
        run = run_child([*IMPORT, str(source), "--json"], folder, case.timeout, ADDRESS_SPACE)
        source.unlink()
        figures.runs += 1
        outcome, right = _outcome(case, run, folder)
        limit_mb = None if case.extra_mb is None else base.peak_mb + case.extra_mb
        within = (limit_mb is None or run.peak_mb <= limit_mb) and not run.killed
        figures.note += (
            f"; {case.name}: {outcome}, {run.seconds:.1f} s (limit {case.timeout:.0f}), peak RSS "
            f"{run.peak_mb:.0f} MB" + ("" if limit_mb is None else f" (limit {limit_mb:.0f})")
        )
        if not (right and within):
            figures.failed_cases += 1
            figures.problem(f"{case.name}: {outcome}, {run.seconds:.1f} s, {run.peak_mb:.0f} MB")


async def hostile_imports(root: Path) -> HostileFigures:
    figures = HostileFigures("hostile")
    folder = root / "hostile"
    folder.mkdir(exist_ok=True)
    await asyncio.to_thread(_run, folder, figures)
    return figures
