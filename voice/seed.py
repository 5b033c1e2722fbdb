"""What the voice session needs from memory, as an interface the daemon implements over the store:
a seed for a fresh session and a place to keep finished turns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from memory.turn import Turn


@dataclass(frozen=True)
class Seed:
    """A fresh session's start: the memory block (pins, summaries, facts) that goes into the
    system instruction, and the tail turns sent as client content before the user speaks."""

    memory_block: str
    history: list[Turn] = field(default_factory=list)


class SessionMemory(Protocol):
    async def seed(self) -> Seed: ...

    async def save(self, turns: list[Turn]) -> None:
        """Store finished turns (idempotent by turn id, so a retry never duplicates)."""
        ...
