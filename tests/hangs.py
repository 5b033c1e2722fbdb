"""What a test that hangs leaves behind. pytest-timeout (its limit and method in pyproject.toml)
writes every thread's stack and ends the run; an async test that hangs shows there only its event
loop waiting in select(), so this plugin writes, a little before, the stack of every asyncio task
still pending: where each coroutine waits."""

from __future__ import annotations

import asyncio
import gc
import threading
from typing import Any

import pytest

# the tasks are written this long before pytest-timeout ends the run (or at 90 % of a short limit)
TASKS_BEFORE_S = 5.0
_TIMER = pytest.StashKey[threading.Timer]()


def pending_tasks() -> list[asyncio.Task[Any]]:
    """Every asyncio task not done, in any loop (read from the timer's thread: the loop's own
    registry is per thread, the garbage collector's list is not)."""
    return [o for o in gc.get_objects() if isinstance(o, asyncio.Task) and not o.done()]


def _write_tasks(item: pytest.Item) -> None:
    terminal = item.config.get_terminal_writer()
    tasks = pending_tasks()
    terminal.sep("+", title=f"{item.nodeid}: {len(tasks)} asyncio tasks pending")
    for task in tasks:
        terminal.line(f"{task!r}")
        for frame in task.get_stack():
            code = frame.f_code
            terminal.line(f'  File "{code.co_filename}", line {frame.f_lineno}, in {code.co_name}')
    terminal.flush()


@pytest.hookimpl(hookwrapper=True)
def pytest_timeout_set_timer(item: pytest.Item, settings: Any) -> Any:
    yield
    limit = settings.timeout
    if limit and limit > 0:
        timer = threading.Timer(max(limit - TASKS_BEFORE_S, limit * 0.9), _write_tasks, (item,))
        timer.daemon = True
        timer.start()
        item.stash[_TIMER] = timer


@pytest.hookimpl(hookwrapper=True)
def pytest_timeout_cancel_timer(item: pytest.Item) -> Any:
    if (timer := item.stash.get(_TIMER, None)) is not None:
        timer.cancel()
    yield
