"""What the running daemon pushes to the page: its state (idle/active, muted, the current chat)
and every turn as it is stored. The page reads it as server-sent events.

Turns are pushed by the daemon as they are stored; the state is read from the daemon (a few
fields in memory) every `poll_s` and sent when it changed, so a state change needs no hook in
every place the daemon changes it. Each page has its own bounded queue: a page that does not
read (a background tab) loses turns instead of growing the daemon's memory, and is told to
reload."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from parla.records.turn import Turn

# Turns a page may have waiting before it is told to reload instead.
_QUEUE = 256


@dataclass(frozen=True)
class LiveState:
    state: str  # starting, idle, active, stopping
    muted: bool
    chat_id: str
    voice_to_voice: str = ""  # the session's and the day's p50/p95 in a line (voice.live.latency)


@dataclass(frozen=True)
class LiveEvent:
    kind: str  # state, turn, reload
    data: dict[str, Any]


def turn_event(chat_id: str, turn: Turn) -> LiveEvent:
    return LiveEvent(
        "turn",
        {
            "chat_id": chat_id,
            "seq": turn.seq,
            "role": turn.role,
            "text": turn.text,
            "interrupted": turn.interrupted,
            "sources": [s.model_dump() for s in turn.sources],
        },
    )


class LiveFeed:
    def __init__(self, state: Callable[[], LiveState], poll_s: float = 0.25) -> None:
        self._state = state
        self._poll_s = poll_s
        self._pages: set[asyncio.Queue[LiveEvent]] = set()
        self._closed = asyncio.Event()

    def state(self) -> LiveState:
        return self._state()

    def turns_stored(self, chat_id: str, turns: Sequence[Turn]) -> None:
        for page in self._pages:
            for turn in turns:
                try:
                    page.put_nowait(turn_event(chat_id, turn))
                except asyncio.QueueFull:
                    page.get_nowait()  # the oldest makes room: the page reloads anyway
                    page.put_nowait(LiveEvent("reload", {}))

    def close(self) -> None:
        """End every page's stream (the server is shutting down)."""
        self._closed.set()

    async def events(self) -> AsyncIterator[LiveEvent]:
        """The state now, then each change and each stored turn, until `close()`."""
        page: asyncio.Queue[LiveEvent] = asyncio.Queue(_QUEUE)
        self._pages.add(page)
        last: LiveState | None = None
        try:
            while not self._closed.is_set():
                now = self._state()
                if now != last:
                    last = now
                    yield LiveEvent("state", asdict(now))
                try:
                    async with asyncio.timeout(self._poll_s):
                        event = await page.get()
                except TimeoutError:
                    continue
                yield event
        finally:
            self._pages.discard(page)
