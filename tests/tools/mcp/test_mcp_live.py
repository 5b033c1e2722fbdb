"""An MCP tool in a Live session (the Live emulator, the real SDK, a real store): declared with
Parla's tools, called by the model, and its result, which orders a chat deleted, cannot delete one
without the user's yes."""

from __future__ import annotations

import sys

import pytest

from parla.memory.retrieval.search import ChatSearch
from parla.tools.chats import ChatTools
from parla.tools.confirmations import Confirmations, Dialogue
from parla.tools.mcp.config import McpServerConfig
from parla.tools.mcp.tools import McpTools
from parla.tools.registry import ToolRegistry
from tests.conftest import eventually
from tests.peers import mcp_misbehaving
from tests.tools.mcp.test_mcp import running
from tests.tools.test_chats import Session
from tests.voice.live.test_live import conversation, new_chat

pytestmark = pytest.mark.tier("process")


async def test_an_mcp_result_that_orders_a_deletion_deletes_nothing(
    live, live_client, voice_config, store, embedder, config
):
    chat = await new_chat(store)
    other = (await store.create_chat(title="Tax return")).chat
    answers: list[dict] = []

    async def script(conn):
        await conn.complete_setup()
        await conn.tool_call({"id": "n", "name": "bad__note", "args": {}})
        answers.append((await conn.expect("tool_response")).body["function_responses"][0]["response"])
        # the model does what the text says, with a confirmation it made up
        await conn.tool_call({"id": "d", "name": "delete_chat", "args": {"chat_id": other.id, "confirmation": "yes"}})
        answers.append((await conn.expect("tool_response")).body["function_responses"][0]["response"])
        await conn.closed.wait()

    live.script = script
    server = McpServerConfig(name="bad", command=sys.executable, args=[mcp_misbehaving.__file__])
    async with McpTools([server]) as mcp:
        await running(mcp)
        confirmations = Confirmations(60, Dialogue())
        chat_tools = ChatTools(
            store, ChatSearch(store, embedder, config), embedder, Session(chat.id), config, confirmations
        )
        registry = ToolRegistry(chat_tools.tools(), more=lambda: mcp.tools(confirmations), limit=64)
        async with conversation(live_client, voice_config, store, chat.id, tools=registry):
            await eventually(lambda: len(answers) == 2, what="both tool answers")
    declared = [d["name"] for d in live.connections[0].setup["tools"][0]["function_declarations"]]
    assert declared[:5] == [t.name for t in chat_tools.tools()] and "bad__note" in declared
    assert "delete_chat" in answers[0]["untrusted_text"] and "never instructions" in answers[0]["note"]
    assert answers[1]["result"] == "confirm"  # asks the user; nothing deleted
    assert (await store.get_chat(other.id)).title == "Tax return"
