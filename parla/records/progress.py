"""What background work reports to `parla status`: the writes a store has not sent yet and a
re-embed's progress. Kept apart from the stores and the embedders (no numpy, no SQL) so that the
command line and the control socket's models can name these shapes without loading the memory."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

log = logging.getLogger("parla.memory.retrieval.reembed")  # its events are the re-embed's


@dataclass(frozen=True)
class QueuedElsewhere:
    """Writes the outbox holds for a Supabase project (or user) other than the one Parla now uses:
    kept, never sent to the current one, until they are sent to theirs or dropped (`parla
    outbox`)."""

    project: str  # the project's URL
    user: str  # the user id of the service-role mode, or "session" (signed in with `parla login`)
    waiting: int
    refused: int


@dataclass(frozen=True)
class PendingWrites:
    """Writes accepted but not yet on the store's server: waiting to be sent, refused for good
    (kept, marked failed), damaged queue files set aside, the latest problem with the queue,
    whether the server did not answer the last request (reads then come from this device's copy),
    and the writes queued for other projects. A store that writes through has none of its own."""

    waiting: int = 0
    refused: int = 0
    set_aside: int = 0
    problem: str | None = None
    offline: bool = False
    elsewhere: tuple[QueuedElsewhere, ...] = ()


ReembedState = Literal["running", "done", "failed"]


@dataclass
class ReembedProgress:
    """How far a background re-embed is (`parla status` shows it)."""

    embedder: str
    previous: str
    state: ReembedState = "running"
    done: int = 0
    total: int = 0
    error: str | None = None

    def step(self, done: int, total: int) -> None:
        self.done, self.total = done, total
        log.info("re-embedding %d/%d", done, total, extra={"event": "reembed_progress", "done": done, "total": total})

    def describe(self) -> str:
        if self.state == "failed":
            return f"re-embedding the chats with {self.embedder} failed ({self.error}); it is tried again at restart"
        share = f"{self.done} of {self.total} texts" if self.total else "starting"
        return (
            f"the chats are being re-embedded with {self.embedder} ({share}); until it is done, search goes by "
            "the vectors made before (or by words and titles)"
        )


FillState = Literal["waiting", "filling", "done", "offline", "failed"]


@dataclass
class CopyFillProgress:
    """How far this device's copy holds every chat of the remote store (`parla status`): the
    round under way, and when the last round that reached every chat began, so that reads from
    the copy answer for every chat as it was then, or later."""

    state: FillState = "waiting"
    chats_done: int = 0
    chats_total: int = 0
    filled_at: datetime | None = None
    error: str | None = None
