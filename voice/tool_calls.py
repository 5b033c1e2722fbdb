"""Tool calls from the live model: each runs as its own task, owned here, and is answered with its
id; a toolCallCancellation cancels the running handler and sends nothing for it."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from google.genai import types

log = logging.getLogger(__name__)


class ToolHandler(Protocol):
    def declarations(self) -> list[types.FunctionDeclaration]: ...

    async def call(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        """The response payload for the model. Errors the model should explain come back as
        `{"error": "..."}`, never as an exception."""
        ...


Reply = Callable[[types.FunctionResponse], Awaitable[None]]


class ToolCalls:
    def __init__(self, handler: ToolHandler | None) -> None:
        self.handler = handler
        self._running: dict[str, asyncio.Task[None]] = {}

    def declarations(self) -> list[types.FunctionDeclaration]:
        return self.handler.declarations() if self.handler else []

    @property
    def pending(self) -> int:
        return len(self._running)

    def start(self, call: types.FunctionCall, reply: Reply) -> None:
        call_id = call.id or ""
        self._running[call_id] = asyncio.create_task(self._run(call, reply), name=f"tool:{call.name}:{call_id}")

    async def _run(self, call: types.FunctionCall, reply: Reply) -> None:
        name = call.name or ""
        try:
            if self.handler is None:
                response: dict[str, Any] = {"error": f"no tools are available; {name!r} cannot be called"}
            else:
                response = await self.handler.call(name, dict(call.args or {}))
            await reply(types.FunctionResponse(id=call.id, name=name, response=response))
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("tool %s failed", name, extra={"event": "tool_failed", "tool": name})
            await reply(types.FunctionResponse(id=call.id, name=name, response={"error": f"{name} failed"}))
        finally:
            self._running.pop(call.id or "", None)

    def cancel(self, ids: list[str]) -> None:
        for call_id in ids:
            task = self._running.pop(call_id, None)
            if task is not None:
                task.cancel()

    async def cancel_all(self) -> None:
        tasks = list(self._running.values())
        self._running.clear()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
