"""The task helpers: every task ends before the helper returns, failures are raised or dropped as
documented, and the caller's own cancellation is never swallowed."""

import asyncio

import pytest

from parla.kernel.tasks import cancel_and_wait, race

pytestmark = pytest.mark.tier("fast")


async def _forever() -> None:
    await asyncio.Event().wait()


async def _fail(after: float) -> None:
    await asyncio.sleep(after)
    raise ValueError("broken")


async def test_cancel_and_wait_ends_every_task_and_drops_their_outcomes():
    sleeping = asyncio.create_task(_forever())
    failed = asyncio.create_task(_fail(0))
    finished = asyncio.create_task(asyncio.sleep(0))
    await asyncio.sleep(0.01)
    await cancel_and_wait(sleeping, None, failed, finished)
    assert sleeping.cancelled()
    assert isinstance(failed.exception(), ValueError)
    assert finished.done() and finished.result() is None


async def test_cancel_and_wait_waits_for_a_task_that_cleans_up():
    cleaned = []

    async def slow_cleanup() -> None:
        try:
            await _forever()
        finally:
            await asyncio.sleep(0.02)
            cleaned.append(True)

    task = asyncio.create_task(slow_cleanup())
    await asyncio.sleep(0)
    await cancel_and_wait(task)
    assert cleaned == [True] and task.done()


async def test_the_callers_cancellation_is_not_swallowed():
    async def stubborn() -> None:
        try:
            await _forever()
        finally:
            await asyncio.sleep(0.05)

    inner = asyncio.create_task(stubborn())
    await asyncio.sleep(0)
    outer = asyncio.create_task(cancel_and_wait(inner))
    await asyncio.sleep(0.01)
    outer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await outer


async def test_race_returns_the_first_to_finish_and_cancels_the_rest():
    slow = asyncio.create_task(_forever())
    fast = asyncio.create_task(asyncio.sleep(0.01, result="first"))
    done = await race([slow, fast])
    assert done == {fast} and fast.result() == "first"
    assert slow.cancelled()


async def test_race_raises_the_failure_of_the_task_that_finished():
    slow = asyncio.create_task(_forever())
    with pytest.raises(ValueError, match="broken"):
        await race([slow, asyncio.create_task(_fail(0.01))])
    assert slow.cancelled()


async def test_race_with_a_timeout_cancels_all_and_returns_none_finished():
    tasks = [asyncio.create_task(_forever()) for _ in range(3)]
    assert await race(tasks, timeout=0.01) == set()
    assert all(task.cancelled() for task in tasks)


async def test_race_cancelled_from_outside_cancels_its_tasks():
    tasks = [asyncio.create_task(_forever()) for _ in range(2)]
    waiting = asyncio.create_task(race(tasks))
    await asyncio.sleep(0.01)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert all(task.cancelled() for task in tasks)
