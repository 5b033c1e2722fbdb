"""Tool calls from the live model: each runs as its own task, owned here, and is answered with its
id; a toolCallCancellation cancels the running handler and sends nothing for it. Two calls with
the same id (a server bug, but not ours to lose) are both tracked: each is answered, and a
cancellation of that id cancels both. A call outlives the connection that issued it: its answer
goes out on the next one."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, runtime_checkable

from google.genai import types

from parla.kernel.tasks import cancel_and_wait

log = logging.getLogger(__name__)


class ToolHandler(Protocol):
    def declarations(self) -> list[types.FunctionDeclaration]: ...

    async def call(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        """The response payload for the model. Errors the model should explain come back as
        `{"error": "..."}`, never as an exception."""
        ...


@runtime_checkable
class ChangingTools(Protocol):
    """A handler whose tools come and go (the user's MCP servers')."""

    async def changed(self) -> None:
        """Returns when the declarations may have changed."""
        ...


Reply = Callable[[types.FunctionResponse], Awaitable[None]]


class ToolCalls:
    def __init__(self, handler: ToolHandler | None, on_done: Callable[[], None] = lambda: None) -> None:
        self.handler = handler
        self.on_done = on_done  # told when a call's task ends (answered, failed or cancelled)
        self._running: dict[str, set[asyncio.Task[None]]] = {}
        self._names: dict[asyncio.Task[None], str] = {}

    def declarations(self) -> list[types.FunctionDeclaration]:
        return self.handler.declarations() if self.handler else []

    def names(self) -> frozenset[str]:
        """The names of the tools declared now."""
        return frozenset(d.name or "" for d in self.declarations())

    async def changed(self) -> None:
        """Returns when the declarations may have changed; never for a handler of fixed tools."""
        if isinstance(self.handler, ChangingTools):
            await self.handler.changed()
        else:
            await asyncio.get_running_loop().create_future()

    @property
    def pending(self) -> int:
        return sum(len(tasks) for tasks in self._running.values())

    def running(self) -> list[str]:
        """The names of the tools whose calls are running."""
        return list(self._names.values())

    def start(self, call: types.FunctionCall, reply: Reply) -> None:
        call_id = call.id or ""
        task = asyncio.create_task(self._run(call, reply), name=f"tool:{call.name}:{call_id}")
        self._running.setdefault(call_id, set()).add(task)
        self._names[task] = call.name or ""
        task.add_done_callback(lambda t: self._forget(call_id, t))

    def _forget(self, call_id: str, task: asyncio.Task[None]) -> None:
        self._names.pop(task, None)
        tasks = self._running.get(call_id)
        if tasks is not None:
            tasks.discard(task)
            if not tasks:
                del self._running[call_id]
        self.on_done()

    async def _run(self, call: types.FunctionCall, reply: Reply) -> None:
        name = call.name or ""
        try:
            if self.handler is None:
                response: dict[str, Any] = {"error": f"no tools are available; {name!r} cannot be called"}
            else:
                response = await self.handler.call(name, dict(call.args or {}))
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("tool %s failed", name, extra={"event": "tool_failed", "tool": name})
            response = {"error": f"{name} failed"}
        await reply(types.FunctionResponse(id=call.id, name=name, response=response))

    def cancel(self, ids: list[str]) -> None:
        for call_id in ids:
            for task in self._running.pop(call_id, set()):
                self._names.pop(task, None)
                task.cancel()

    async def cancel_all(self) -> None:
        tasks = [task for group in self._running.values() for task in group]
        self._running.clear()
        self._names.clear()
        await cancel_and_wait(*tasks)
