"""The tool registry: each tool is a function declaration for the live model (a name, a
description written for the model, the JSON schema of its arguments), a pydantic model that
validates those arguments, an async handler and a timeout.

Whatever goes wrong comes back to the model as `{"error": "..."}` saying what was wrong, so it can
explain or ask again: bad arguments, an unknown tool, a handler over its timeout, a store error. A
bug in a handler is logged and answered the same way; it never takes the session down.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from google.genai import types
from pydantic import BaseModel, ValidationError

from parla.kernel.errors import ParlaError

log = logging.getLogger(__name__)

Handler = Callable[[Any], Awaitable[dict[str, Any]]]


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    arguments: type[BaseModel]
    handler: Handler
    timeout: float = 10.0
    # The JSON schema declared, where the arguments model does not say it (an MCP server's tool)
    parameters: dict[str, Any] | None = None

    def declaration(self) -> types.FunctionDeclaration:
        if self.parameters is not None:
            return types.FunctionDeclaration(
                name=self.name, description=self.description, parameters_json_schema=self.parameters
            )
        schema = self.arguments.model_json_schema()
        schema.pop("title", None)
        for prop in schema.get("properties", {}).values():
            prop.pop("title", None)
        return types.FunctionDeclaration(name=self.name, description=self.description, parameters_json_schema=schema)


def _explain(error: ValidationError) -> str:
    problems = []
    for e in error.errors():
        where = ".".join(str(p) for p in e["loc"]) or "arguments"
        problems.append(f"{where}: {e['msg']}")
    return "; ".join(problems)


class ToolRegistry:
    """`tools` are always declared; `more` gives the tools that come and go (an MCP server's, while it
    runs), read at each declaration and call, and `changes` returns when they may have changed.
    `limit` caps the declarations: Parla's own tools are declared first and always, then `more` in
    its order (stable, so a session's declarations are the same each time), as many as fit."""

    def __init__(
        self,
        tools: list[Tool],
        more: Callable[[], list[Tool]] | None = None,
        limit: int | None = None,
        changes: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._tools = {tool.name: tool for tool in tools}
        self._more = more
        self._limit = limit
        self._changes = changes

    async def changed(self) -> None:
        """Returns when the declarations may have changed; never while only fixed tools are given."""
        if self._changes is None:
            await asyncio.get_running_loop().create_future()
        else:
            await self._changes()

    def _all(self) -> dict[str, Tool]:
        extra = [t for t in (self._more() if self._more else []) if t.name not in self._tools]
        room = len(extra) if self._limit is None else max(0, self._limit - len(self._tools))
        if len(extra) > room:
            log.warning(
                "%d tools not declared: the model takes %d at most",
                len(extra) - room,
                self._limit,
                extra={"event": "tools_over_budget", "dropped": [t.name for t in extra[room:]]},
            )
        return self._tools | {tool.name: tool for tool in extra[:room]}

    def declarations(self) -> list[types.FunctionDeclaration]:
        return [tool.declaration() for tool in self._all().values()]

    async def call(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        tools = self._all()
        tool = tools.get(name)
        if tool is None:
            return {"error": f"there is no tool {name!r}; the tools are: {', '.join(tools)}"}
        try:
            parsed = tool.arguments.model_validate(args)
        except ValidationError as e:
            return {"error": f"bad arguments for {name}: {_explain(e)}"}
        try:
            async with asyncio.timeout(tool.timeout):
                return await tool.handler(parsed)
        except TimeoutError:
            return {"error": f"{name} took longer than {tool.timeout:g} s and was stopped; try again"}
        # ToolError, store and model errors: words the model can pass on; a ValidationError is data a
        # handler built from the model's arguments (a fact of blanks only) that the domain refused
        except (ParlaError, ValidationError) as e:
            return {"error": str(e)}
        except Exception:
            log.exception("tool %s failed", name, extra={"event": "tool_failed", "tool": name})
            return {"error": f"{name} failed unexpectedly; the details are in Parla's log"}
