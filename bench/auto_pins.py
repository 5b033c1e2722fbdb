"""Auto pins: `python -m bench.auto_pins`. Precision and recall of the offline detector (the rules
of memory.language.importance) on a labelled set of 60 statements, 20 of which deserve a pin
(tests/data/autopin_statements.jsonl: health, family, names, dates, decisions, preferences, codes
and places, against questions, hypotheticals, other people's facts, moods and requests). Prints
its figures and every statement it gets wrong; asserts nothing."""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path

from bench.report import Table, parse
from parla.memory.language.importance import durable_statements

LABELLED = Path(__file__).parents[1] / "tests" / "data" / "autopin_statements.jsonl"


@dataclass(frozen=True)
class Labelled:
    text: str
    pin: bool  # deserves a pin
    kind: str | None


@dataclass(frozen=True)
class Score:
    precision: float
    recall: float
    missed: list[str]  # deserve a pin, not caught
    wrong: list[str]  # caught, do not deserve one


def labelled(path: Path = LABELLED) -> list[Labelled]:
    return [Labelled(**json.loads(line)) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def score(rows: list[Labelled]) -> Score:
    caught = [bool(durable_statements(r.text)) for r in rows]
    hits = sum(1 for r, c in zip(rows, caught, strict=True) if c and r.pin)
    return Score(
        precision=hits / max(sum(caught), 1),
        recall=hits / max(sum(1 for r in rows if r.pin), 1),
        missed=[r.text for r, c in zip(rows, caught, strict=True) if r.pin and not c],
        wrong=[r.text for r, c in zip(rows, caught, strict=True) if c and not r.pin],
    )


def main() -> None:
    _, out = parse(argparse.ArgumentParser(description=__doc__))
    rows = labelled()
    result = score(rows)
    table = Table(
        ["offline auto-pin detector", "statements", "deserve a pin", "precision", "recall"],
    )
    table.row(
        "rules of memory.language.importance",
        len(rows),
        sum(r.pin for r in rows),
        f"{result.precision:.2f}",
        f"{result.recall:.2f}",
    )
    out.table(table)
    for text in result.missed:
        out.line(f"missed: {text}")
    for text in result.wrong:
        out.line(f"pinned wrongly: {text}")


if __name__ == "__main__":
    main()
