"""Recall on LoCoMo: `python -m bench.locomo_recall --data PATH`. Prints figures only.

Does `recall` return what was said? Each conversation's sessions are imported as chats by `parla
import` itself (in-process, a temporary SQLite store per conversation, as `bench.switch_fidelity`
does); each question whose evidence is one turn is asked of `recall` (the call the tool and
`parla recall` make) across every chat, and inside the chat that holds the answer. Measured:
- evidence recall@5: the share of questions whose evidence turn is among the 5 results, as a
  turn or inside a window of turns (what was said), and counting also a chunk summary, a meta
  summary or facts whose range holds it (the measure the issue's first figures used);
- across chats, the share whose chat is among the results at all;
- the latency of a recall (p50 / p95), and the length of its answer (the characters of its 5
  results, median), since a result that holds more turns is likelier to hold the evidence.

The data is CC BY-NC: read from PATH, never written anywhere but the temporary directory.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.locomo import DEVELOPMENT, Conversation, LocomoError, load
from bench.memory import percentile
from bench.report import Table, parse
from bench.switch_fidelity import History, environment, import_history
from parla.daemon.cli.support import load_settings
from parla.daemon.memory_services import open_memory
from parla.memory.retrieval.recall import Recall, Recalled

_EVIDENCE = re.compile(r"D\d+:\d+")
SAID = ("turn", "turns")


@dataclass(frozen=True)
class Asked:
    question: str
    session: int
    seq: int


@dataclass
class Tally:
    hits: int = 0
    range_hits: int = 0
    chat_hits: int = 0
    asked: int = 0
    millis: list[float] = field(default_factory=list)
    chars: list[float] = field(default_factory=list)

    def add(self, found: list[Recalled], chat_id: str, seq: int, millis: float) -> None:
        self.asked += 1
        self.millis.append(millis)
        self.chars.append(sum(len(r.text) for r in found))
        holding = [
            r for r in found if r.chat_id == chat_id and r.range is not None and r.range.start <= seq <= r.range.end
        ]
        self.hits += any(r.kind in SAID for r in holding)
        self.range_hits += bool(holding)
        self.chat_hits += any(r.chat_id == chat_id for r in found)

    def row(self, table: Table, name: str) -> None:
        n = self.asked or float("nan")
        table.row(
            name,
            f"{self.hits / n:.3f} ({self.hits}/{self.asked})",
            f"{self.range_hits / n:.3f}",
            f"{self.chat_hits / n:.3f}",
            f"{percentile(self.millis, 0.5):.1f}",
            f"{percentile(self.millis, 0.95):.1f}",
            f"{percentile(self.chars, 0.5):.0f}",
        )


def questions_of(conversation: Conversation) -> list[Asked]:
    """The questions whose evidence is one turn the import kept, with its session and seq."""
    where = {d: (s.number, n) for s in conversation.sessions for n, d in enumerate(s.spoken, start=1)}
    asked = []
    for q in conversation.questions:
        evidence = {e for item in q.evidence for e in _EVIDENCE.findall(item)}
        if len(evidence) == 1 and (place := where.get(evidence.pop())):
            asked.append(Asked(q.text, *place))
    return asked


async def measure(history: History, across: Tally, inside: Tally) -> None:
    with environment(PARLA_STORE_PATH=str(history.store_path)):
        settings = load_settings()
    async with open_memory(settings) as mem:
        recall = Recall(mem.store, mem.embedder, settings)
        for q in questions_of(history.conversation):
            chat_id = history.chat_ids[q.session]
            for tally, scope in ((across, None), (inside, chat_id)):
                started = time.perf_counter()
                found = await recall.recall(q.question, scope)
                tally.add(found, chat_id, q.seq, (time.perf_counter() - started) * 1000)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="locomo10.zip, its extracted folder, or locomo10.json")
    parser.add_argument(
        "--conversations", default=",".join(DEVELOPMENT), help="comma-separated ids (default: the development ones)"
    )
    args, out = parse(parser)
    wanted = [c.strip() for c in args.conversations.split(",") if c.strip()]
    if outside := [c for c in wanted if c not in DEVELOPMENT]:
        parser.error(f"{', '.join(outside)} is not a development conversation; the others are the held-out test")
    try:
        conversations = load(args.data.resolve(), wanted)
    except LocomoError as e:
        sys.exit(f"locomo_recall: {e}")
    across, inside = Tally(), Tally()
    with tempfile.TemporaryDirectory() as tmp:
        settings = {
            "PARLA_STORE": "sqlite",
            "PARLA_CONFIG_FILE": str(Path(tmp) / "none.toml"),
            "PARLA_EMBEDDER": "offline",
            "PARLA_SUMMARIZER": "offline",
        }
        with environment(**settings):
            for conversation in conversations:
                history = import_history(conversation, Path(tmp))
                asyncio.run(measure(history, across, inside))
    table = Table(
        [
            "recall",
            "evidence recall@5, as said",
            "counting a summary or facts of its range",
            "right chat among the results",
            "p50 ms",
            "p95 ms",
            "answer characters (median)",
        ],
        title=f"recall on LoCoMo: {', '.join(wanted)}; offline embedder and summarizer",
    )
    across.row(table, "across every chat")
    inside.row(table, "inside the chat that holds it")
    out.table(table)


if __name__ == "__main__":
    main()
