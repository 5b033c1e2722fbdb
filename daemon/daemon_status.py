"""What the daemon keeps about itself for `parla status`, and the typed turns waiting for what
became of them."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Literal

from parla.memory.turn import Turn

State = Literal["starting", "idle", "active", "stopping"]


@dataclass
class TypedTurn:
    """A `parla say` waiting for what became of it: answered (and stored, or kept aside), or
    failed (and then whether the text is stored in the chat)."""

    turn: Turn  # the user turn it is stored as (by id)
    outcome: asyncio.Future[dict[str, Any]]
    sent: bool = False  # said in a session: the session stores it
    answer: Turn | None = None  # the model's answer, on its way to the store

    def settle(self, result: dict[str, Any]) -> None:
        if not self.outcome.done():
            self.outcome.set_result(result)


@dataclass
class DaemonStatus:
    state: State = "starting"
    session_started: float | None = None
    sessions: int = 0
    wake_detections: int = 0
    restarts: int = 0  # unexpected failures the daemon went on after
    last_error: str | None = None
    kept_turns: int = 0  # turns not stored in time, kept aside for the next start
    lost_turns: int = 0  # turns neither stored nor kept aside (the local file failed too)
