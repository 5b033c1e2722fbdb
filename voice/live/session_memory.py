"""What the voice session needs from memory, as an interface the daemon implements over the store:
the seed of a fresh session (what it starts knowing: the chat's memory block and its tail turns),
a place to keep finished turns, and a place on disk for turns held back from the store a while."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from parla.records.turn import Turn


@dataclass(frozen=True)
class Seed:
    """A fresh session's start: the memory block (pins, summaries, facts) that goes into the
    system instruction, and the tail turns sent as client content before the user speaks."""

    memory_block: str
    history: list[Turn] = field(default_factory=list)


@dataclass(frozen=True)
class Refused:
    """Turns the store refused for good: kept on this machine instead (`where`), with why."""

    count: int
    reason: str
    where: str


class SessionMemory(Protocol):
    async def seed(self) -> Seed:
        """The start of a fresh session in this chat, read from the store now."""
        ...

    async def save(self, turns: list[Turn]) -> Refused | None:
        """Store finished turns (idempotent by turn id, so a retry never duplicates). Turns the
        store refuses for good are kept locally and reported, never raised; any other failure
        raises, and the same turns are tried again later."""
        ...

    async def keep(self, turns: list[Turn], reason: str) -> None:
        """Keep turns that could not be stored (the session is closing) on this machine, with why."""
        ...

    async def hold(self, turns: list[Turn]) -> None:
        """Keep on disk turns held back from the store (an answer the speaker still plays, which
        the user may cut), as they would be stored now, until `forget`: if the process dies
        meanwhile, they are stored at the next start. On disk when this returns."""
        ...

    async def forget(self, ids: list[str]) -> None:
        """Forget the held turns with these ids: their final version is stored (or kept)."""
        ...
