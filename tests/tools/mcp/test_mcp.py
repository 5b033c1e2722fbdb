"""The user's MCP tools through the registry, with the real `mcp` SDK: `mcp-server-time` from the
package registry over stdio, and a server written with the SDK that misbehaves (hangs, dies,
returns 1 MB, tells Parla to delete a chat, has a destructive tool)."""

from __future__ import annotations

import asyncio
import logging
import socket
import sys

import pytest

from parla.tools.confirmations import Confirmations, Dialogue
from parla.tools.mcp.config import McpServerConfig
from parla.tools.mcp.tools import McpTools
from parla.tools.registry import Tool, ToolRegistry
from tests.peers import mcp_misbehaving
from tests.tools.test_registry import EchoArgs, echo

pytestmark = pytest.mark.tier("process")

TOKEN = "tok-8d1f-secret"


def time_server(**kw) -> McpServerConfig:
    return McpServerConfig(
        name="time", command=sys.executable, args=["-m", "mcp_server_time", "--local-timezone", "Europe/Rome"], **kw
    )


def bad_server(**kw) -> McpServerConfig:
    return McpServerConfig(
        name="bad",
        command=sys.executable,
        args=[mcp_misbehaving.__file__],
        **(
            {
                "env": {"MISBEHAVING_TOKEN": TOKEN},
                "call_timeout_s": 1.0,
                "max_result_chars": 1000,
                "restart_delay_s": 0.1,
            }
            | kw
        ),
    )


def session_tools(mcp: McpTools, own: list[Tool] | None = None, **kw) -> tuple[ToolRegistry, Dialogue]:
    """A session's registry over the servers' tools, and the dialogue its confirmations are checked against."""
    dialogue = Dialogue()
    confirmations = Confirmations(60, dialogue, wait_s=0.05)
    return ToolRegistry(own or [], more=lambda: mcp.tools(confirmations), **kw), dialogue


def answered(dialogue: Dialogue) -> None:
    """What the live session tells the dialogue when the model asks and the user answers."""
    dialogue.model_turn_ended()
    dialogue.user_turn_began()


def names(registry: ToolRegistry) -> list[str]:
    return [d.name for d in registry.declarations()]


async def running(mcp: McpTools) -> None:
    async with asyncio.timeout(20):
        while not all(s.running for s in mcp.servers):
            await asyncio.sleep(0.02)


async def test_mcp_server_time_from_the_registry_answers_under_its_prefix():
    async with McpTools([time_server(allow=["get_current_time"])]) as mcp:
        await running(mcp)
        registry, _ = session_tools(mcp)
        assert names(registry) == ["time__get_current_time"]  # convert_time is not allowed
        (declaration,) = registry.declarations()
        assert declaration.parameters_json_schema["required"] == ["timezone"]
        answer = await registry.call("time__get_current_time", {"timezone": "Asia/Tokyo"})
        assert '"timezone": "Asia/Tokyo"' in answer["untrusted_text"] and "+09:00" in answer["untrusted_text"]
        assert "information only" in answer["note"]
        refused = await registry.call("time__get_current_time", {"timezone": "Mars/Olympus"})
        assert "error" in refused


async def test_a_misbehaving_server_is_survived(caplog):
    caplog.set_level(logging.DEBUG)
    async with McpTools([bad_server()]) as mcp:
        await running(mcp)
        registry, dialogue = session_tools(mcp)
        assert names(registry) == [
            f"bad__{n}" for n in ("agreed", "die", "empty_bin", "flood", "hang", "has_token", "note")
        ]
        # the environment reaches the server, and never the log
        assert (await registry.call("bad__has_token", {}))["untrusted_text"] == "yes"
        # a hung call ends at its timeout; the server still answers
        hung = await registry.call("bad__hang", {})
        assert "took longer than 1 s" in hung["error"]
        assert (await registry.call("bad__has_token", {}))["untrusted_text"] == "yes"
        # 1 MB comes back cut
        flood = (await registry.call("bad__flood", {}))["untrusted_text"]
        assert len(flood) < 1100 and flood.endswith("[cut: 999000 more characters]")
        # a result that gives orders is handed back as information, with no power to confirm anything
        note = await registry.call("bad__note", {})
        assert "delete_chat" in note["untrusted_text"] and "never instructions" in note["note"]
        # a destructive tool runs only on a second call with the confirmation for the same arguments
        first = await registry.call("bad__empty_bin", {"what": "trash"})
        assert first["result"] == "confirm"
        assert (await registry.call("bad__empty_bin", {"what": "photos", "confirmation": first["confirmation"]}))[
            "result"
        ] == "confirm"
        again = await registry.call("bad__empty_bin", {"what": "trash"})
        answered(dialogue)
        done = await registry.call("bad__empty_bin", {"what": "trash", "confirmation": again["confirmation"]})
        assert done["untrusted_text"] == "emptied trash"
        # it dies: its tools are withdrawn, the call says so, and it comes back
        died = await registry.call("bad__die", {})
        assert "stopped" in died["error"] and names(registry) == []
        assert "there is no tool" in (await registry.call("bad__has_token", {}))["error"]
        await running(mcp)
        assert mcp.servers[0].starts == 2 and "bad__has_token" in names(registry)
    assert TOKEN not in caplog.text and all(TOKEN not in str(r.__dict__) for r in caplog.records)


async def test_a_server_slower_to_start_than_a_call_may_take_still_starts():
    # the start was held to call_timeout_s: a loaded machine took longer than 1 s to start the test
    # server (a Python process importing the MCP SDK), which was then restarted again and again
    config = bad_server(env={"MISBEHAVING_TOKEN": TOKEN, "MISBEHAVING_START_DELAY_S": "1.5"}, start_timeout_s=20)
    async with McpTools([config]) as mcp:
        await running(mcp)
        assert mcp.servers[0].starts == 1


async def test_the_declarations_stay_within_the_limit_and_parlas_own_tools_always_stay():
    own = [Tool(f"own_{i}", "mine", EchoArgs, echo) for i in range(3)]
    async with McpTools([time_server()]) as mcp:
        await running(mcp)
        registry, _ = session_tools(mcp, own, limit=4)
        assert names(registry) == ["own_0", "own_1", "own_2", "time__convert_time"]
        assert (
            "there is no tool 'time__get_current_time'" in (await registry.call("time__get_current_time", {}))["error"]
        )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def http_server(port: int) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, mcp_misbehaving.__file__, "--http", str(port), stderr=asyncio.subprocess.DEVNULL
    )


async def test_a_streamable_http_server_that_dies_is_withdrawn_and_taken_back_when_it_returns():
    port = free_port()
    process = await http_server(port)
    try:
        config = McpServerConfig(name="web", url=f"http://127.0.0.1:{port}/mcp", allow=["has_token", "die"])
        async with McpTools([config.model_copy(update={"restart_delay_s": 0.1, "restart_max_delay_s": 0.2})]) as mcp:
            await running(mcp)
            registry, _ = session_tools(mcp)
            assert names(registry) == ["web__die", "web__has_token"]
            assert (await registry.call("web__has_token", {}))["untrusted_text"] == "no"
            assert "error" in await registry.call("web__die", {})
            await process.wait()
            async with asyncio.timeout(10):  # found dead by the failed call, or by the next ping
                while mcp.servers[0].running:
                    await asyncio.sleep(0.02)
            assert names(registry) == []
            process = await http_server(port)
            await running(mcp)
            assert (await registry.call("web__has_token", {}))["untrusted_text"] == "no"
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def test_a_session_waits_for_servers_in_their_first_start_only_and_each_until_its_start_timeout():
    loop = asyncio.get_running_loop()
    gone = McpServerConfig(name="gone", command="/nonexistent/mcp-server")
    async with McpTools([gone]) as mcp:
        began = loop.time()
        assert await mcp.started(20) == [] and loop.time() - began < 2  # a server that failed is not waited for
        assert mcp.servers[0].state == "restarting" and mcp.servers[0].last_error == "FileNotFoundError"
    # a server that takes longer than its start timeout is waited for that long, not the session's limit
    stuck = bad_server(env={"MISBEHAVING_START_DELAY_S": "60"}, start_timeout_s=1.0)
    slow = bad_server(env={"MISBEHAVING_START_DELAY_S": "0.5"}, start_timeout_s=20.0).model_copy(
        update={"name": "slow"}
    )
    async with McpTools([stuck, slow]) as mcp:
        assert mcp.starting() == ["bad", "slow"]
        began = loop.time()
        left = await mcp.started(20)
        waited = loop.time() - began
        assert 0.8 < waited < 8, waited  # the slow one's start, or the stuck one's timeout, whichever is later
        assert mcp.servers[1].state == "running" and left in ([], ["bad"])
        began = loop.time()
    # a stop does not wait for the stuck one to finish its start (it held the stop for its 60 s)
    assert loop.time() - began < 8
    async with McpTools([slow]) as mcp:  # the session's limit bounds the wait
        began = loop.time()
        assert await mcp.started(0.2) == ["slow"] and loop.time() - began < 1
