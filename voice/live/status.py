"""What a live conversation tells its owner: events as they happen, and a status to read."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Literal

from parla.records.turn import Turn

# "turn": turns queued for storing; "stored": stored (or refused for good and kept locally);
# "kept": not stored before the session closed, kept locally (`SessionMemory.keep`); "lost":
# neither stored nor kept (the local file could not be written either).
EventKind = Literal[
    "connected",
    "resumed",
    "reconnecting",
    "goaway",
    "gave_up",
    "save_failed",
    "save_refused",
    "turn",
    "stored",
    "kept",
    "lost",
    "switched",
]


@dataclass(frozen=True)
class SessionEvent:
    kind: EventKind
    detail: str = ""
    turns: tuple[Turn, ...] = ()  # the turns a "turn", "stored" or "kept" event is about


@dataclass
class LiveStatus:
    connected: bool = False
    connections: int = 0
    resumed: int = 0
    reconnects: int = 0
    last_error: str | None = None
    unsaved_turns: int = 0
    refused_turns: int = 0  # refused for good by the store and kept locally, this session
    # monotonic time of the last sign of conversation: speech heard or spoken, a typed turn, a tool call
    last_activity: float = field(default_factory=time.monotonic)
