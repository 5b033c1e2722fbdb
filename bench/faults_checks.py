"""What the fault suite counts, and the store read from outside after a fault (`bench.faults` and
its scenarios in `bench.faults_locked`, `bench.faults_flood`): `PRAGMA integrity_check`, each chat's
turns in order, summary and fact ranges inside their chat, turns lost or stored twice."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

Exchange = tuple[str, str]  # (role, text)


@dataclass
class Figures:
    scenario: str
    kills: int = 0
    checked: int = 0  # acknowledged turns looked for after a kill (a turn counts once per check)
    lost: int = 0
    duplicated: int = 0
    integrity_failures: int = 0
    memory_failures: int = 0  # inconsistent ranges, or the compaction re-run failed
    runs: int = 0
    problems: list[str] = field(default_factory=list)
    note: str = ""

    @property
    def ok(self) -> bool:
        return not (self.lost or self.duplicated or self.integrity_failures or self.memory_failures)

    def problem(self, text: str) -> None:
        if len(self.problems) < 20:
            self.problems.append(text)


def integrity(db: Path) -> str:
    with sqlite3.connect(db) as conn:
        return "; ".join(str(r[0]) for r in conn.execute("PRAGMA integrity_check"))


def stored_turns(db: Path) -> dict[str, list[Exchange]]:
    """Every chat's turns in order, as (role, text)."""
    chats: dict[str, list[Exchange]] = {}
    with sqlite3.connect(db) as conn:
        for chat_id in conn.execute("SELECT id FROM chats"):
            chats[chat_id[0]] = []
        for chat_id, role, parts in conn.execute("SELECT chat_id, role, parts FROM turns ORDER BY chat_id, seq"):
            chats[chat_id].append((role, "".join(p.get("text", "") for p in json.loads(parts))))
    return chats


def range_problems(db: Path) -> list[str]:
    """Summary and fact ranges outside their chat or overlapping another of the same kind."""
    problems = []
    with sqlite3.connect(db) as conn:
        counts = dict(conn.execute("SELECT id, turn_count FROM chats"))
        for chat_id, through, count in conn.execute("SELECT id, summarized_through, turn_count FROM chats"):
            if through > count:
                problems.append(f"chat {chat_id[:8]} summarized through {through} of {count} turns")
        kinds = {
            "summary level 0": "SELECT chat_id, start_seq, end_seq FROM summaries WHERE level = 0",
            "summary level 1": "SELECT chat_id, start_seq, end_seq FROM summaries WHERE level = 1",
            "facts": "SELECT chat_id, start_seq, end_seq FROM facts",
        }
        for kind, query in kinds.items():
            last_end: dict[str, int] = {}
            for chat_id, start, end in sorted(conn.execute(query)):
                if start > end or start < 1 or end > counts.get(chat_id, 0):
                    problems.append(f"{kind} {start}-{end} outside chat {chat_id[:8]} ({counts.get(chat_id)} turns)")
                if start <= last_end.get(chat_id, 0):
                    problems.append(f"{kind} {start}-{end} overlaps another in chat {chat_id[:8]}")
                last_end[chat_id] = end
    return problems


def compare(expected: list[Exchange], stored: list[Exchange]) -> tuple[int, int]:
    """(lost, duplicated): turns of `expected` missing from `stored`, and turns stored more often
    than expected."""
    want, have = Counter(expected), Counter(stored)
    lost = sum((want - have).values())
    duplicated = sum(n - want[t] for t, n in have.items() if n > max(want[t], 1)) + sum(
        n - 1 for t, n in have.items() if t not in want and n > 1
    )
    return lost, duplicated


def check_store(db: Path, figures: Figures, when: str) -> None:
    verdict = integrity(db)
    if verdict != "ok":
        figures.integrity_failures += 1
        figures.problem(f"{when}: integrity_check: {verdict}")
    for problem in range_problems(db):
        figures.memory_failures += 1
        figures.problem(f"{when}: {problem}")


def check_exchanges(db: Path, chat_id: str, texts: list[str], figures: Figures, when: str, what: str) -> list[Exchange]:
    """The store after a fault: each typed text in `texts` and the emulator's answer to it are in
    the chat once. Returns the chat's turns."""
    check_store(db, figures, when)
    turns = stored_turns(db).get(chat_id, [])
    expected = [t for text in texts for t in (("user", text), ("model", f"You said {text}"))]
    lost, duplicated = compare(expected, turns)
    figures.lost += lost
    figures.duplicated += duplicated
    figures.checked += len(expected)
    if lost or duplicated:
        figures.problem(f"{when}: {lost} lost, {duplicated} duplicated of {len(expected)} {what} turns")
    return turns
