"""Spacing calls to stay under a rate limit (calls a minute), for work that is not waited for."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


class CallSpacing:
    """Lets one call through every 60/`per_minute` seconds, the first at once; the waiting callers
    go in turn. Shared by whatever counts against the same limit."""

    def __init__(self, per_minute: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.interval = 60.0 / per_minute
        self.clock = clock
        self._next = 0.0
        self._lock = asyncio.Lock()

    async def wait(self) -> None:
        async with self._lock:
            delay = self._next - self.clock()
            if delay > 0:
                await asyncio.sleep(delay)
            self._next = max(self._next, self.clock()) + self.interval
