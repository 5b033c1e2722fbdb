"""Finished turns on their way to the store, off the audio path: one task stores batches in the
order they were said. A failure the memory does not settle (it keeps turns refused for good aside
itself) is temporary: the same batch is retried with backoff, and the batches after it wait. What
is still unsaved when the saver closes (by its deadline, or cancelled) is kept locally
(`SessionMemory.keep`); turns may also be kept locally while they wait (`keep_now`), and are
still stored after (appends are idempotent by turn id, so a replay of the kept ones adds nothing).

Turns held back from the store (an answer the speaker still plays, which the user may yet cut) are
kept on disk meanwhile (`hold`, `SessionMemory.hold`) by a second task, so a slow store never
delays them; a batch that carries their final version says which to `forget` once it is stored
(or kept locally), and the same task forgets them then, in order after they were written."""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable

from parla.kernel.tasks import cancel_and_wait
from parla.records.turn import Turn

from .session_memory import SessionMemory
from .status import LiveStatus, SessionEvent

log = logging.getLogger(__name__)

# The memory, the turns to store, and the ids of held turns kept on disk to forget once they are.
Batch = tuple[SessionMemory, list[Turn], list[str]]

# Backoff between tries of a batch the store failed to take.
_RETRY_DELAY_S = 0.5
_RETRY_MAX_DELAY_S = 30.0


class TurnSaver:
    """Counts what it holds in `status` (unsaved_turns, refused_turns) and says what happens
    through `emit` ("stored", "kept", "save_failed", "save_refused")."""

    def __init__(self, status: LiveStatus, emit: Callable[[SessionEvent], None], drain_s: float) -> None:
        self.status = status
        self.drain_s = drain_s
        self._emit = emit
        self._batches: deque[Batch] = deque()  # in the order said; the first is the one being stored
        self._changed = asyncio.Event()  # a batch came, or one was stored
        self._last_error: str | None = None
        self._task: asyncio.Task[None] | None = None
        self._deadline: float | None = None  # the owner is stopping: no wait for the store past it
        self._draining: asyncio.Timeout | None = None  # the drain under way
        self._held: deque[tuple[SessionMemory, list[Turn], list[str]]] = deque()  # in order: hold, forget
        self._held_changed = asyncio.Event()
        self._held_task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="live:saver")
        self._held_task = asyncio.create_task(self._run_held(), name="live:saver-held")

    def hurry(self, deadline: float) -> None:
        """Wait for the store no later than `deadline` (a loop time), in a drain under way too."""
        self._deadline = deadline
        if self._draining is not None and (self._draining.when() or deadline) >= deadline:
            self._draining.reschedule(deadline)

    async def close(self) -> None:
        """Store what is queued (waiting at most `drain_s`, and not past the `hurry` deadline),
        then keep the rest locally, also when the close is cancelled."""
        try:
            await self.drain()
        finally:
            try:
                await cancel_and_wait(self._task)
                await self._keep_unsaved()
                await self.held_written()
            finally:
                await cancel_and_wait(self._held_task)

    def put(self, memory: SessionMemory, turns: list[Turn], forget: list[str] | None = None) -> None:
        """Queue `turns` for the store; `forget`: held turns kept on disk (`hold`) that these
        settle, forgotten once they are stored."""
        self._batches.append((memory, turns, forget or []))
        self.status.unsaved_turns += len(turns)
        self._changed.set()

    def hold(self, memory: SessionMemory, turns: list[Turn]) -> None:
        """Keep `turns`, held back from the store, on disk now (off the caller's path), until a
        batch that settles them is stored."""
        self._held_put(memory, turns, [])

    async def drain(self) -> None:
        """Until every queued turn is stored, or `drain_s` has passed, or the `hurry` deadline
        (then logged)."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        until = started + self.drain_s
        if self._deadline is not None:
            until = min(until, self._deadline)
        try:
            async with asyncio.timeout_at(until) as self._draining:
                await self._until(lambda: not self._batches)
        except TimeoutError:
            log.error(
                "%d turns are not stored yet after %.1fs",
                self.status.unsaved_turns,
                loop.time() - started,
                extra={"event": "turns_unsaved", "count": self.status.unsaved_turns},
            )
        finally:
            self._draining = None

    async def keep_now(self, ids: set[str], reason: str) -> list[Turn]:
        """Keep the waiting turns with these ids locally now; they are still stored once the
        store takes them. Returns the turns kept."""
        kept = []
        for memory, turns, _ in list(self._batches):
            these = [t for t in turns if t.id in ids]
            if these:
                await memory.keep(these, reason)
                kept += these
        return kept

    async def _until(self, condition: Callable[[], bool]) -> None:
        # No await between the check and the clear: a change cannot slip in unseen.
        while not condition():
            self._changed.clear()
            await self._changed.wait()

    async def _run(self) -> None:
        while True:
            await self._until(lambda: bool(self._batches))
            memory, turns, forget = self._batches[0]
            delay = _RETRY_DELAY_S
            refused = None
            while turns:  # none: the batch only settles held turns (their final version says nothing)
                try:
                    refused = await memory.save(turns)
                    break
                except asyncio.CancelledError:
                    raise
                except Exception as e:  # noqa: BLE001 - keep the turns and try again; say so
                    self._last_error = f"{type(e).__name__}: {e}"
                    log.error("storing %d turns failed: %s; retrying in %.1fs", len(turns), e, delay)
                    self._emit(SessionEvent("save_failed", self._last_error))
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, _RETRY_MAX_DELAY_S)
            if refused is not None:
                self.status.refused_turns += refused.count
                detail = f"{refused.count} turns kept in {refused.where}: {refused.reason}"
                log.error("the store refused turns for good; %s", detail, extra={"event": "turns_refused"})
                self._emit(SessionEvent("save_refused", detail))
            self._batches.popleft()
            self.status.unsaved_turns -= len(turns)
            self._changed.set()
            self._held_put(memory, [], forget)
            if turns:
                self._emit(SessionEvent("stored", turns=tuple(turns)))

    async def _keep_unsaved(self) -> None:
        """The saver has stopped: what it could not store is kept locally."""
        reason = f"not stored before the session closed (last error: {self._last_error or 'none'})"
        while self._batches:
            memory, turns, forget = self._batches.popleft()
            if turns:
                try:
                    await memory.keep(turns, reason)
                except Exception as e:
                    log.exception(
                        "%d turns could not be stored nor kept locally", len(turns), extra={"event": "turns_lost"}
                    )
                    self._emit(SessionEvent("lost", f"{type(e).__name__}: {e}", tuple(turns)))
                    continue  # the held copy of them, if any, stays for the next start
                self.status.unsaved_turns -= len(turns)
                self.status.refused_turns += len(turns)
                self._emit(SessionEvent("kept", reason, tuple(turns)))
            self._held_put(memory, [], forget)

    # the held lane

    def _held_put(self, memory: SessionMemory, hold: list[Turn], forget: list[str]) -> None:
        if hold or forget:
            self._held.append((memory, hold, forget))
            self._held_changed.set()

    async def _run_held(self) -> None:
        while True:
            while not self._held:
                self._held_changed.clear()
                await self._held_changed.wait()
            memory, hold, forget = self._held[0]
            try:
                if hold:
                    await memory.hold(hold)
                else:
                    await memory.forget(forget)
            except asyncio.CancelledError:
                raise
            except Exception:  # the turns are still on their way to the store: say so, go on
                if hold:
                    log.exception(
                        "%d held turns could not be kept on disk; they are in memory only until stored",
                        len(hold),
                        extra={"event": "held_unkept"},
                    )
                else:
                    log.exception(
                        "%d stored turns could not be forgotten from the held file; the next start stores nothing twice",
                        len(forget),
                        extra={"event": "held_unforgotten"},
                    )
            self._held.popleft()
            self._held_changed.set()

    async def held_written(self) -> None:
        """Until what the held lane was given is done (each step is a local file's write)."""
        while self._held and self._held_task is not None and not self._held_task.done():
            self._held_changed.clear()
            await self._held_changed.wait()
