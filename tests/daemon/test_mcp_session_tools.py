"""An MCP server's tools that come or go while a session is open reach the model: the session, wired
as the daemon wires it (daemon/conversation.py), resumes with its handle and the tools of now in the
setup (the Live API takes tools only in the setup), at once when nothing is under way, else once the
model's turn is over. The real google-genai SDK against the Live emulator, the misbehaving MCP
server started slowly."""

from __future__ import annotations

import asyncio
import sys

import pytest

from parla.tools.mcp.config import McpServerConfig
from tests.conftest import eventually
from tests.daemon.test_confirmation_rule import call, session
from tests.peers import mcp_misbehaving
from tests.peers.live_emulator import tone
from tests.tools.mcp.test_mcp import running
from tests.voice.live.test_live import stored

pytestmark = pytest.mark.tier("process")


def slow_server(start_delay_s: float) -> McpServerConfig:
    return McpServerConfig(
        name="bad",
        command=sys.executable,
        args=[mcp_misbehaving.__file__],
        env={"MISBEHAVING_START_DELAY_S": str(start_delay_s)},
        allow=["die", "has_token"],
        restart_delay_s=0.1,
    )


def declared(conn) -> set[str]:
    return {d["name"] for tool in conn.setup.get("tools") or [] for d in tool["function_declarations"]}


BAD = {"bad__die", "bad__has_token"}


async def test_tools_that_come_or_go_in_a_quiet_session_are_declared_at_once_or_after_the_turn(
    live, live_client, gemini, tmp_path
):
    died = asyncio.Event()

    async def script(conn):
        await conn.complete_setup()
        await conn.resumption(f"h{conn.index}")
        if conn.index == 1:  # the server's tools came: the model uses one, which kills the server
            answer = await call(conn, "1", "bad__die")
            assert "stopped" in answer["error"]
            died.set()
            await conn.reply("The bin server stopped.", tone(0.1))
        await conn.closed.wait()

    live.script = script
    async with session(live, live_client, gemini, tmp_path, slow_server(1.0), started=False) as at:
        first = await live.wait_connections(1)
        assert not declared(first) & BAD  # the session opened while the server started
        await running(at.mcp)
        second = await live.wait_connections(2, timeout=10)
        assert declared(second) >= BAD and second.handle == "h0"  # resumed, with the tools
        await died.wait()
        third = await live.wait_connections(3, timeout=10)  # withdrawn once the answer is over
        assert not declared(third) & BAD and third.handle == "h1"
        fourth = await live.wait_connections(4, timeout=20)  # restarted: back at once
        assert declared(fourth) >= BAD and fourth.handle == "h2"
        await eventually(lambda: at.conversation.status.declared >= BAD, what="the session to hold the tools")


async def test_tools_that_come_while_the_user_speaks_wait_for_the_end_of_the_turn(live, live_client, gemini, tmp_path):
    answer = asyncio.Event()

    async def script(conn):
        await conn.complete_setup()
        await conn.resumption(f"h{conn.index}")
        if conn.index == 0:
            await conn.heard(" What is in the bin?")  # the user's turn, not answered yet
            await answer.wait()
            await conn.reply("Let me look into the bin.", tone(0.1))
        await conn.closed.wait()

    live.script = script
    async with session(live, live_client, gemini, tmp_path, slow_server(1.0), started=False) as at:
        first = await live.wait_connections(1)
        assert not declared(first) & BAD
        await eventually(lambda: at.conversation.assembler.in_progress, what="the user's words")
        await running(at.mcp)
        await asyncio.sleep(0.5)
        assert len(live.connections) == 1  # the user's turn is not cut for the tools
        answer.set()
        second = await live.wait_connections(2, timeout=10)
        assert declared(second) >= BAD and second.handle == "h0"
        await eventually(lambda: _stored(at.mem.store, at.chat_id, 2), what="the exchange to be stored")
        assert await stored(at.mem.store, at.chat_id) == [
            ("user", "What is in the bin?"),
            ("model", "Let me look into the bin."),
        ]


async def _stored(store, chat_id, n):
    return (await store.get_chat(chat_id)).turn_count >= n
