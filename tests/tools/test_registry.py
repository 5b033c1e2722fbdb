"""The registry answers every call with a result or an error the model can explain."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import BaseModel, Field

from parla.tools.errors import ToolError
from parla.tools.registry import Tool, ToolRegistry

pytestmark = pytest.mark.tier("fast")


class EchoArgs(BaseModel):
    text: str = Field(min_length=1, description="What to echo.")
    times: int = Field(1, ge=1, le=3)


async def echo(args: EchoArgs) -> dict:
    return {"echo": " ".join([args.text] * args.times)}


async def slow(args: EchoArgs) -> dict:
    await asyncio.sleep(5)
    return {}


async def refuse(args: EchoArgs) -> dict:
    raise ToolError("that chat was deleted")


async def broken(args: EchoArgs) -> dict:
    raise KeyError("bug")


def registry() -> ToolRegistry:
    return ToolRegistry(
        [
            Tool("echo", "Repeat the text.", EchoArgs, echo),
            Tool("slow", "Too slow.", EchoArgs, slow, timeout=0.05),
            Tool("refuse", "Refuses.", EchoArgs, refuse),
            Tool("broken", "Has a bug.", EchoArgs, broken),
        ]
    )


def test_declarations_carry_the_schema_without_titles():
    (decl, *_) = registry().declarations()
    assert decl.name == "echo" and decl.description == "Repeat the text."
    schema = decl.parameters_json_schema
    assert schema["required"] == ["text"] and "title" not in schema
    assert schema["properties"]["text"] == {"description": "What to echo.", "minLength": 1, "type": "string"}


async def test_calls_and_every_kind_of_failure(caplog):
    r = registry()
    assert await r.call("echo", {"text": "hi", "times": 2}) == {"echo": "hi hi"}
    assert await r.call("echo", {"times": 9}) == {
        "error": "bad arguments for echo: text: Field required; times: Input should be less than or equal to 3"
    }
    assert await r.call("nope", {}) == {"error": "there is no tool 'nope'; the tools are: echo, slow, refuse, broken"}
    assert await r.call("slow", {"text": "x"}) == {"error": "slow took longer than 0.05 s and was stopped; try again"}
    assert await r.call("refuse", {"text": "x"}) == {"error": "that chat was deleted"}
    assert await r.call("broken", {"text": "x"}) == {
        "error": "broken failed unexpectedly; the details are in Parla's log"
    }
    assert "KeyError: 'bug'" in caplog.text
