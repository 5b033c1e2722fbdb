"""Ending tasks the way their owner must: cancelled and awaited, so none outlives its owner and no
error is left unretrieved. Memory, voice and the daemon all own tasks, and memory imports nothing
of the others, so the helpers live here.

A wait with a limit is `async with asyncio.timeout(...)`, never `asyncio.wait_for`: on Python 3.11,
when what wait_for waits for finishes in the same turn of the loop as a cancellation arrives (the
owner stopping the task, or an outer timeout firing), it returns the result and the cancellation is
lost, so a loop stopped by its owner, or bounded by one timeout around it (which fires once), runs
on for good. tests/test_waits.py holds the product, the benchmarks and the peers to it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any


async def cancel_and_wait(*tasks: asyncio.Future[Any] | None) -> None:
    """Cancel the tasks (None and finished ones are skipped) and wait until each has ended. Their
    outcomes are dropped: an owner that wants a task's error reads it before. A cancellation of
    the caller while it waits still propagates."""
    live = [task for task in tasks if task is not None]
    for task in live:
        task.cancel()
    await asyncio.gather(*live, return_exceptions=True)


async def race(tasks: Iterable[asyncio.Future[Any]], timeout: float | None = None) -> set[asyncio.Future[Any]]:
    """Wait until the first of `tasks` finishes (or `timeout` passes), then cancel and await the
    others. Returns the finished tasks; the first failure among them is raised."""
    pending = set(tasks)
    try:
        done, _ = await asyncio.wait(pending, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        await cancel_and_wait(*(task for task in pending if not task.done()))
    for task in done:
        if not task.cancelled() and (error := task.exception()) is not None:
            raise error
    return done
