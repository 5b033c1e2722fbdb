"""What the chat and memory tools' answers share: when something happened, in the user's words, and
the notes for a store whose server is away. A write the user asks for is then kept in the store's
outbox (`WriteQueued`) and the tool answers at once with what was done, marked `queued`: the model
tells the user it is done here and reaches their other devices once the store answers again. A
read then comes from this device's copy, marked `offline`."""

from __future__ import annotations

from collections.abc import Awaitable
from datetime import datetime
from typing import Any, TypeVar

from parla.memory.errors import WriteQueued
from parla.memory.store.protocol import StoreState
from parla.records.turn import local_time, utcnow

T = TypeVar("T")

# what a tool adds to its answer when the write waits in the outbox
_QUEUED = {
    "queued": True,
    "queued_note": "Done on this device; the store is unreachable, so it reaches the user's other devices once it is back.",
}

_FROM_COPY = {
    "offline": True,
    "offline_note": "The store is unreachable: this comes from this device's copy; chats added on other devices "
    "since it was last reached may be missing.",
}


def spoken_when(moment: datetime, now: datetime | None = None) -> str:
    # Days as the user counts them, in their local time zone.
    days = (local_time(now or utcnow()).date() - local_time(moment).date()).days
    if days <= 0:
        return "today"
    if days == 1:
        return "yesterday"
    if days < 7:
        return f"{days} days ago"
    if days < 60:
        return f"{days // 7} weeks ago"
    return f"on {moment.day} {moment:%B %Y}"


async def kept(write: Awaitable[T], done: T) -> tuple[T, dict[str, Any]]:
    """The write's result, or `done` (what it does) with the queued note when it waits in the outbox."""
    try:
        return await write, {}
    except WriteQueued:
        return done, _QUEUED


async def from_copy(store: StoreState) -> dict[str, Any]:
    """The note for an answer read from this device's copy while the store is away."""
    return _FROM_COPY if (await store.pending_writes()).offline else {}
