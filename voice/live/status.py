"""What a live conversation tells its owner: events as they happen, and a status to read."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from parla.records.turn import Turn

log = logging.getLogger(__name__)

# "turn": turns queued for storing; "stored": stored (or refused for good and kept locally);
# "kept": not stored before the session closed, kept locally (`SessionMemory.keep`); "lost":
# neither stored nor kept (the local file could not be written either). "model_turn_over": a model
# turn in which the model spoke ended (completed or cut off); "user_turn": a user turn began (its
# first words heard, or a typed turn sent; voice.live.transcript says when), in the order they
# happened: what the confirmation of a tool that changes things is checked against.
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
    "model_turn_over",
    "user_turn",
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
    declared: frozenset[str] = frozenset()  # the tools the open (or last) connection declared


@dataclass
class Events:
    """The owner's handler of the session's events (None: nobody listens)."""

    handler: Callable[[SessionEvent], None] | None = None

    def __call__(self, event: SessionEvent) -> None:
        if self.handler is None:
            return
        try:
            self.handler(event)
        except Exception:  # an observer's bug must not stop the saver or the connection loop
            log.exception("the session's event handler failed on %s", event.kind)

    def emit(self, kind: EventKind, detail: str = "") -> None:
        self(SessionEvent(kind, detail))
