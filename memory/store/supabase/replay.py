"""The Supabase store's outbox replay: every write of turns, and every write the user asks for,
goes into the local `Outbox` first and is sent from there, in order and idempotently (by turn id,
by the chat or pin id chosen on this device); while the server is away or busy the writes wait
(`WriteQueued`) and a background task owned by the replay sends them when it answers again."""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any, Self

from parla.records.progress import PendingWrites

from ...errors import ChatNotFound, StoreError, StoreOffline, StoreRefused, TurnConflict, WriteQueued
from ..outbox import Outbox, OutboxEntry, OutboxOp

log = logging.getLogger("parla.memory.store.supabase.store")


@dataclass(frozen=True)
class RetryPolicy:
    """How a write that meets a temporary error is tried again: `attempts` tries in the call itself,
    waiting `delay` seconds before the second and twice as long each time after (with jitter);
    then the write waits in the outbox and the background replay tries again, backing off up to
    `max_delay` seconds between rounds, for as long as it takes."""

    attempts: int = 3
    delay: float = 0.25
    max_delay: float = 30.0

    def backoff(self, delay: float) -> float:
        return min(delay * 2, self.max_delay)


class OutboxReplay:
    """Sends an outbox's entries with `send` (one entry's RPC calls). Use as `async with`: the
    context owns the outbox file and the replay task."""

    def __init__(self, outbox: Outbox, send: Callable[[OutboxEntry], Awaitable[object]], retry: RetryPolicy) -> None:
        self.outbox = outbox
        self.retry = retry
        self._send = send
        self._send_lock = asyncio.Lock()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._queued = True  # until a first flush: a previous run may have left turns queued

    async def __aenter__(self) -> Self:
        await self.outbox.open()
        self._task = asyncio.create_task(self._replay_loop(), name="supabase-outbox-replay")
        self._wake.set()  # replay what a previous run left
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None
        await self.outbox.close()

    async def _replay_loop(self) -> None:
        """Send the outbox whenever woken, retrying with backoff while the server is away or busy."""
        delay = self.retry.delay
        while True:
            await self._wake.wait()
            self._wake.clear()
            try:
                await self.flush()
            except StoreOffline as e:
                delay = self.retry.backoff(delay)
                log.info("outbox replay: %s; retrying in %.1f s", e, delay)
                await asyncio.sleep(delay)
                self._wake.set()
            except Exception as e:  # an auth failure, or a bug: keep the turns, say so, try again later
                cap = self.retry.max_delay
                log.warning(
                    "outbox replay failed, retrying in %.0f s: %s", cap, e, exc_info=not isinstance(e, StoreError)
                )
                await asyncio.sleep(cap)
                self._wake.set()
            else:
                delay = self.retry.delay

    async def flush(self) -> int:
        """Send every queued write in order; returns how many were sent. Raises `StoreOffline`
        when the server is away (the rest stay queued)."""
        async with self._send_lock:
            results = await self._send_pending()
        self._queued = False
        return sum(not isinstance(r, StoreError) for r in results.values())

    async def pending_writes(self) -> PendingWrites:
        waiting, refused = await self.outbox.depth()
        problems = self.outbox.problems
        set_aside = len(self.outbox.set_aside_files())
        problem = problems[-1] if problems else None
        return PendingWrites(waiting, refused, set_aside, problem, elsewhere=await self.outbox.elsewhere())

    async def send_queued_first(self) -> None:
        """A read sees the turns this machine wrote: queued ones are sent before it."""
        if self._queued:  # back online before the replay task noticed
            try:
                await self.flush()
            except StoreOffline:
                pass  # the read fails with the same cause

    async def write_through(self, op: OutboxOp, chat_id: str, payload: dict[str, Any]) -> Any:
        """Queue a write and send the queue, this write last; its result. When the server is away
        the write waits in the outbox (`WriteQueued` says so)."""
        async with self._send_lock:
            entry_id = await self.outbox.put(op, chat_id, payload)
            try:
                results = await self._send_pending()
            except StoreError as e:  # away, busy, or the session or schema is wrong: the turns wait
                self._queued = True
                self._wake.set()
                if not isinstance(e, StoreOffline):
                    raise
                waiting, _ = await self.outbox.depth()
                raise WriteQueued(
                    f"{e}; {waiting} writes wait in the local outbox and will be sent when it is back"
                ) from e
        result = results[entry_id]
        if isinstance(result, StoreError):
            raise result
        return result

    async def _send_pending(self) -> dict[int, object]:
        """Results by entry id. An entry refused for good is kept, marked failed with the reason,
        and the ones queued after it go on; a temporary error stops the round (`StoreOffline`)
        with that entry and the rest still queued, in order."""
        results: dict[int, object] = {}
        pending = await self.outbox.pending()
        while pending:
            entry, ids, pending = _first_write(pending)
            try:
                result = await self._send_retrying(entry)
            except (ChatNotFound, TurnConflict, StoreRefused) as e:
                for entry_id in ids:
                    results[entry_id] = e
                    await self.outbox.fail(entry_id, str(e))
                log.error(
                    "Supabase refused %s of chat %s for good; kept in the outbox, marked failed: %s",
                    f"{len(entry.payload['turns'])} turns" if "turns" in entry.payload else entry.op,
                    entry.chat_id,
                    e,
                    extra={"event": "outbox_refused"},
                )
                continue
            for entry_id in ids:
                results[entry_id] = result
                await self.outbox.ack(entry_id)
        return results

    async def _send_retrying(self, entry: OutboxEntry) -> object:
        """`send`, tried again after a temporary error: safe, as the calls are idempotent by turn
        id (a try whose answer was lost stored its turns once; the next one stores nothing more)."""
        delay = self.retry.delay
        for attempt in range(1, self.retry.attempts):
            try:
                return await self._send(entry)
            except StoreOffline as e:
                log.info(
                    "Supabase write failed (try %d of %d), again in %.2f s: %s", attempt, self.retry.attempts, delay, e
                )
            entry = replace(entry, tried_before=True)
            await asyncio.sleep(delay * random.uniform(0.5, 1.0))  # jitter: clients that failed together spread
            delay = self.retry.backoff(delay)
        return await self._send(entry)


def _first_write(pending: list[OutboxEntry]) -> tuple[OutboxEntry, list[int], list[OutboxEntry]]:
    """The first queued write to send, the entry ids it stands for, and the rest. A chat created
    without turns and the turns queued right after it for that chat go as one creation, so no other
    device ever sees the chat without its first turns."""
    first, rest = pending[0], pending[1:]
    if (
        first.op == "create_chat"
        and not first.payload.get("turns")
        and rest
        and rest[0].op == "append_turns"
        and rest[0].chat_id == first.chat_id
    ):
        merged = replace(first, payload={**first.payload, "turns": rest[0].payload["turns"]})
        return merged, [first.id, rest[0].id], rest[1:]
    return first, [first.id], rest
