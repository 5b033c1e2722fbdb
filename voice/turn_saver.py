"""Finished turns on their way to the store, off the audio path: one task stores batches in the
order they were said. A failure the memory does not settle (it keeps turns refused for good aside
itself) is temporary: the same batch is retried with backoff, and the batches after it wait. What
is still unsaved when the saver closes is kept locally (`SessionMemory.keep`)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from parla.memory.tasks import cancel_and_wait
from parla.memory.turn import Turn
from parla.voice.session_memory import SessionMemory
from parla.voice.status import EventKind, LiveStatus

log = logging.getLogger(__name__)

Batch = tuple[SessionMemory, list[Turn]]

# Backoff between tries of a batch the store failed to take.
_RETRY_DELAY_S = 0.5
_RETRY_MAX_DELAY_S = 30.0


class TurnSaver:
    """Counts what it holds in `status` (unsaved_turns, refused_turns) and says what happens
    through `emit` ("save_failed", "save_refused")."""

    def __init__(self, status: LiveStatus, emit: Callable[[EventKind, str], None], drain_s: float) -> None:
        self.status = status
        self.drain_s = drain_s
        self._emit = emit
        self._queue: asyncio.Queue[Batch] = asyncio.Queue()
        self._saving: Batch | None = None  # the batch being stored
        self._last_error: str | None = None
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="live:saver")

    async def close(self) -> None:
        """Store what is queued (waiting at most `drain_s`), then keep the rest locally."""
        await self.drain()
        await cancel_and_wait(self._task)
        await self._keep_unsaved()

    def put(self, memory: SessionMemory, turns: list[Turn]) -> None:
        self._queue.put_nowait((memory, turns))
        self.status.unsaved_turns += len(turns)

    async def drain(self) -> None:
        """Until every queued turn is stored, or `drain_s` has passed (then logged)."""
        try:
            await asyncio.wait_for(self._queue.join(), self.drain_s)
        except TimeoutError:
            log.error(
                "%d turns are not stored yet after %gs",
                self.status.unsaved_turns,
                self.drain_s,
                extra={"event": "turns_unsaved", "count": self.status.unsaved_turns},
            )

    async def _run(self) -> None:
        while True:
            memory, turns = self._saving = await self._queue.get()
            delay = _RETRY_DELAY_S
            while True:
                try:
                    refused = await memory.save(turns)
                    break
                except asyncio.CancelledError:
                    raise
                except Exception as e:  # noqa: BLE001 - keep the turns and try again; say so
                    self._last_error = f"{type(e).__name__}: {e}"
                    log.error("storing %d turns failed: %s; retrying in %.1fs", len(turns), e, delay)
                    self._emit("save_failed", self._last_error)
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, _RETRY_MAX_DELAY_S)
            if refused is not None:
                self.status.refused_turns += refused.count
                detail = f"{refused.count} turns kept in {refused.where}: {refused.reason}"
                log.error("the store refused turns for good; %s", detail, extra={"event": "turns_refused"})
                self._emit("save_refused", detail)
            self._saving = None
            self.status.unsaved_turns -= len(turns)
            self._queue.task_done()

    async def _keep_unsaved(self) -> None:
        """The saver has stopped: what it could not store is kept locally."""
        batches = [self._saving] if self._saving is not None else []
        self._saving = None
        while not self._queue.empty():
            batches.append(self._queue.get_nowait())
        reason = f"not stored before the session closed (last error: {self._last_error or 'none'})"
        for memory, turns in batches:
            try:
                await memory.keep(turns, reason)
            except Exception:
                log.exception(
                    "%d turns could not be stored nor kept locally", len(turns), extra={"event": "turns_lost"}
                )
                continue
            self.status.unsaved_turns -= len(turns)
            self.status.refused_turns += len(turns)
