"""Summaries of many chats in the background (a big import): what they will cost, and the worker
that makes them from the store's queue at a bounded rate.

An import stores the turns and indexes what was said at once (searchable by meaning and words);
summarising thousands of chats with Gemini is thousands of calls, so before queueing them the
user is told how many calls and tokens it takes (`summary_cost`, an estimate from the same
settings compaction follows). The queue lives in the store (`SummaryQueue.queue_summaries`), so the
work survives restarts; `SummaryWorker` takes one chat at a time with a lease, compacts it, and
settles it. A rate limit (429) puts the chat back with the delay the API asked for and pauses the
worker that long; Gemini away, or the vectors being rebuilt for another embedder, pauses it too;
no chat ever leaves the queue unsummarised or loses what was stored. Each compaction step commits
on its own, so a chat taken again carries on."""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass
from typing import Self

from parla.kernel.tasks import cancel_and_wait

from ..config import MemoryConfig
from ..errors import ChatNotFound, ModelUnavailable, RateLimited, Reembedding, StoreError
from ..store.protocol import SummaryQueue
from .compactor import Compactor

log = logging.getLogger(__name__)

# The instructions and framing each summarising call sends beside the text it summarises.
_PROMPT_TOKENS = 150


@dataclass(frozen=True)
class SummaryCost:
    """About how many model calls and input tokens summarising some chats takes."""

    chats: int = 0
    calls: int = 0
    input_tokens: int = 0

    def __add__(self, other: SummaryCost) -> SummaryCost:
        return SummaryCost(self.chats + other.chats, self.calls + other.calls, self.input_tokens + other.input_tokens)

    def minutes_at(self, calls_per_minute: float) -> float:
        return self.calls / calls_per_minute


def summary_cost(turn_tokens: Sequence[int], titled: bool, config: MemoryConfig) -> SummaryCost:
    """The calls and input tokens one chat of turns of `turn_tokens` tokens takes to summarise, by
    the rules compaction follows: the rolling summary folds all but the tail once the chat passes
    `summary_window_size` turns or `chunk_summarize_threshold` tokens, in steps of at most that many
    tokens; each complete chunk gets a summary, its facts (and auto pins); every `meta_every`
    chunks a meta summary; a chat without a title gets one."""
    n, total = len(turn_tokens), sum(turn_tokens)
    calls = tokens = 0
    if n > config.summary_window_size or total > config.chunk_summarize_threshold:
        foldable = sum(turn_tokens[: -config.tail]) if n > config.tail else 0
        steps = max(1, math.ceil(foldable / config.chunk_summarize_threshold))
        calls += steps
        tokens += foldable + steps * (config.summary_token_cap + _PROMPT_TOKENS)
    chunks = n // config.chunk_size
    per_chunk = 3 if config.auto_pins else 2
    calls += chunks * per_chunk
    tokens += per_chunk * (sum(turn_tokens[: chunks * config.chunk_size]) + chunks * _PROMPT_TOKENS)
    metas = chunks // config.meta_every
    calls += metas
    tokens += metas * (config.meta_every * config.chunk_summary_token_cap + _PROMPT_TOKENS)
    if not titled and n >= config.title_min_turns:
        calls += 1
        tokens += config.summary_token_cap + _PROMPT_TOKENS
    return SummaryCost(1, calls, tokens)


@dataclass
class QueueProgress:
    """What the worker is doing (`parla status`, the inspector)."""

    done: int = 0  # chats summarised since the worker started
    current: str | None = None  # the chat being summarised
    paused_until: float | None = None  # time.monotonic() until which it waits (a rate limit, Gemini away)
    last_error: str | None = None

    def shown(self) -> dict[str, object]:
        paused = None if self.paused_until is None else max(0.0, self.paused_until - time.monotonic())
        return {
            "done": self.done,
            "current": self.current,
            "paused_for_s": None if not paused else round(paused, 1),
            "last_error": self.last_error,
        }


async def queue_status(store: SummaryQueue, progress: QueueProgress) -> dict[str, object] | None:
    """The queue as `parla status` and the inspector show it (None when the store cannot say):
    chats waiting, and what the worker did and does."""
    try:
        queue = await store.summary_queue()
    except StoreError:
        return None
    return {
        "waiting": queue.waiting,
        "next_due_in_s": None if queue.next_due_in_s is None else round(queue.next_due_in_s, 1),
        **progress.shown(),
        "last_error": progress.last_error or queue.last_error,
    }


class SummaryWorker:
    """Works the store's summary queue with `compactor` (whose summarizer spaces its calls to the
    rate limit) until it is left (`async with`; leaving puts a chat being summarised back, due at
    once). It looks for work every `poll_s` seconds, or at once after `wake()`; a chat that cannot
    be summarised now is due again after the delay a rate limit asks for, else `pause_s`."""

    def __init__(
        self, store: SummaryQueue, compactor: Compactor, lease_s: float, pause_s: float, poll_s: float = 30.0
    ) -> None:
        self.store = store
        self.compactor = compactor
        self.lease_s = lease_s
        self.pause_s = pause_s
        self.poll_s = poll_s
        self.progress = QueueProgress()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Self:
        self._task = asyncio.create_task(self._run(), name="summary-queue")
        return self

    async def __aexit__(self, *exc: object) -> None:
        await cancel_and_wait(self._task)

    def wake(self) -> None:
        """Look at the queue now (chats were just queued)."""
        self._wake.set()

    async def _run(self) -> None:
        while True:
            try:
                chat_id = await self.store.take_summary(self.lease_s)
            except StoreError as e:  # the store away: its queue is still there when it answers
                self.progress.last_error = str(e)
                log.warning("summary queue: %s; looking again in %.0f s", e, self.pause_s)
                await self._pause(self.pause_s)
                continue
            if chat_id is None:
                self._wake.clear()
                with suppress(TimeoutError):
                    async with asyncio.timeout(self.poll_s):  # not wait_for: see parla.kernel.tasks
                        await self._wake.wait()
                continue
            await self._summarise(chat_id)

    async def _summarise(self, chat_id: str) -> None:
        self.progress.current = chat_id
        try:
            await self.compactor.compact(chat_id)
        except asyncio.CancelledError:
            with suppress(StoreError):  # stopped: due again at once, for the next worker
                await self.store.settle_summary(chat_id, 0.0, "the worker stopped")
            raise
        except Exception as failure:  # noqa: BLE001 - the chat stays queued with why; the others go on
            e = _cause(failure)  # a chunk's call fails inside the task group of its compaction
            if isinstance(e, ChatNotFound):
                await self._settle(chat_id, None, None)  # deleted meanwhile: nothing to summarise
            elif isinstance(e, RateLimited):
                wait = self.pause_s if e.retry_after_s is None else e.retry_after_s
                log.warning("summary queue: rate limited (%s); chat %s again in %.0f s", e, chat_id[:8], wait)
                await self._settle(chat_id, wait, str(e))
                await self._pause(wait)
            elif isinstance(e, (ModelUnavailable, Reembedding)):  # for a while: the chats after it too
                log.warning("summary queue: %s; chat %s again in %.0f s", e, chat_id[:8], self.pause_s)
                await self._settle(chat_id, self.pause_s, str(e))
                await self._pause(self.pause_s)
            else:
                error = f"{type(e).__name__}: {e}"
                log.error(
                    "summary queue: chat %s could not be summarised (%s); again in %.0f s",
                    chat_id,
                    error,
                    self.pause_s,
                )
                await self._settle(chat_id, self.pause_s, error)
        else:
            await self._settle(chat_id, None, None)
            self.progress.done += 1
        finally:
            self.progress.current = None

    async def _settle(self, chat_id: str, retry_in_s: float | None, error: str | None) -> None:
        self.progress.last_error = error or self.progress.last_error
        try:
            await self.store.settle_summary(chat_id, retry_in_s, error)
        except StoreError as e:  # the lease ends on its own: the chat is taken again then
            log.warning("summary queue: could not settle chat %s (%s)", chat_id[:8], e)

    async def _pause(self, seconds: float) -> None:
        self.progress.paused_until = time.monotonic() + seconds
        try:
            await asyncio.sleep(seconds)
        finally:
            self.progress.paused_until = None


def _cause(e: BaseException) -> BaseException:
    """The failure that decides what happens to the chat: in a group of them, a deleted chat, then
    a rate limit, then Gemini away or a re-embed running, else the first."""
    if not isinstance(e, BaseExceptionGroup):
        return e
    found = [_cause(inner) for inner in e.exceptions]
    for kind in (ChatNotFound, RateLimited, ModelUnavailable, Reembedding):
        if match := next((f for f in found if isinstance(f, kind)), None):
            return match
    return found[0]
