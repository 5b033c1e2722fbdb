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

from parla.memory.errors import ParlaError

log = logging.getLogger(__name__)

Handler = Callable[[Any], Awaitable[dict[str, Any]]]


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    arguments: type[BaseModel]
    handler: Handler
    timeout: float = 10.0

    def declaration(self) -> types.FunctionDeclaration:
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
    def __init__(self, tools: list[Tool]) -> None:
        self._tools = {tool.name: tool for tool in tools}

    def declarations(self) -> list[types.FunctionDeclaration]:
        return [tool.declaration() for tool in self._tools.values()]

    async def call(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        tool = self._tools.get(name)
        if tool is None:
            return {"error": f"there is no tool {name!r}; the tools are: {', '.join(self._tools)}"}
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
