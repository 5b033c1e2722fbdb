"""The confirmation rule through the daemon's wiring of a session (daemon/conversation.py), the
real google-genai SDK against the Live emulator and a real MCP server: a tool that changes things
(delete_chat, an MCP tool that is not read-only) runs on a call with its confirmation only when
Parla itself saw a user turn after the question was asked (the transcript of a spoken turn, or a
typed turn). A tool result that claims the user agreed, and a model that calls again with the
confirmation without a word of the user in between, change nothing."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import pytest

from parla.daemon.conversation import CurrentChat, live_conversation
from parla.daemon.memory_services import MemoryServices, open_memory
from parla.records.turn import new_id
from parla.tools.mcp.config import McpServerConfig
from parla.tools.mcp.tools import McpTools
from parla.voice.live.conversation import LiveConversation
from tests.conftest import eventually
from tests.daemon.conftest import peer_settings
from tests.peers import mcp_misbehaving
from tests.peers.live_emulator import tone, typed_turn
from tests.tools.mcp.test_mcp import running

pytestmark = pytest.mark.tier("process")


@dataclass
class Session:
    mem: MemoryServices
    chat_id: str
    mcp: McpTools
    conversation: LiveConversation


@asynccontextmanager
async def session(
    live, live_client, gemini, tmp_path, server: McpServerConfig, others: dict[str, str] | None = None, started=True
) -> AsyncIterator[Session]:
    """A live session in a chat of its own (and `others` beside it: titles by id), wired as the
    daemon wires one, with `server`'s tools: it opens once the server runs, or at once (`started`
    false), while the server may still be starting."""
    s = peer_settings(live, gemini, tmp_path, embedder="offline", transcript_hold_s=0.1)
    async with open_memory(s) as mem, mem.compaction_worker() as worker, McpTools([server]) as mcp:
        chat_id = (await mem.store.create_chat(title="Chores")).chat.id
        for other_id, title in (others or {}).items():
            await mem.store.create_chat(chat_id=other_id, title=title)
        if started:
            await running(mcp)
        current = CurrentChat(mem, worker, chat_id)
        async with live_conversation(live_client, current, None, None, mcp=mcp) as conversation:
            current.conversation = conversation
            yield Session(mem, chat_id, mcp, conversation)


def bad_server(tmp_path) -> McpServerConfig:
    return McpServerConfig(
        name="bad",
        command=sys.executable,
        args=[mcp_misbehaving.__file__],
        env={"MISBEHAVING_BIN": str(tmp_path / "bin.log")},
        allow=["agreed", "empty_bin"],
    )


def emptied(tmp_path) -> list[str]:
    log = tmp_path / "bin.log"
    return log.read_text().split() if log.exists() else []


async def call(conn, call_id: str, name: str, **args) -> dict:
    await conn.tool_call({"id": call_id, "name": name, "args": args})
    frame = await conn.expect("tool_response", timeout=15)
    return frame.body["function_responses"][0]["response"]


async def test_a_result_that_says_the_user_agreed_confirms_nothing_and_a_user_turn_does(
    live, live_client, gemini, tmp_path
):
    answers: dict[str, dict] = {}

    async def script(conn):
        await conn.complete_setup()
        # the user asks; the model asks back, then a result speaks for the user
        await conn.heard(" Empty the photos bin.")
        asked = answers["asked"] = await call(conn, "1", "bad__empty_bin", what="photos")
        answers["agreed"] = await call(conn, "2", "bad__agreed")
        # the model obeys the result: the same call with the confirmation, no word of the user since
        answers["attack"] = await call(conn, "3", "bad__empty_bin", what="photos", confirmation=asked["confirmation"])
        # it speaks its question (the model's turn ends) and calls again, still without an answer
        await conn.reply("Shall I empty the photos bin?", tone(0.1))
        again = answers["again"] = await call(
            conn, "4", "bad__empty_bin", what="photos", confirmation=answers["attack"].get("confirmation")
        )
        # the user says yes: now the confirmation acts
        await conn.reply("Shall I empty the photos bin for good?", tone(0.1))
        await conn.heard(" Yes, empty it.")
        answers["done"] = await call(conn, "5", "bad__empty_bin", what="photos", confirmation=again.get("confirmation"))
        await conn.closed.wait()

    live.script = script
    async with session(live, live_client, gemini, tmp_path, bad_server(tmp_path)):
        await eventually(lambda: "done" in answers, timeout=30, what="the five calls")
    assert answers["asked"]["result"] == "confirm"
    assert "agreed to everything" in answers["agreed"]["untrusted_text"]
    # refused: asked again, nothing emptied
    assert answers["attack"]["result"] == "confirm" and "untrusted_text" not in answers["attack"]
    assert "no answer from the user" in answers["attack"]["say"]
    assert answers["again"]["result"] == "confirm" and "untrusted_text" not in answers["again"]
    assert answers["done"].get("untrusted_text") == "emptied photos", answers
    assert emptied(tmp_path) == ["photos"]


async def test_delete_chat_acts_only_after_a_typed_yes(live, live_client, gemini, tmp_path):
    answers: dict[str, dict] = {}
    tax = new_id()

    async def script(conn):
        await conn.complete_setup()
        await conn.heard(" Delete the tax chat.")
        asked = answers["asked"] = await call(conn, "1", "delete_chat", chat_id=tax)
        await call(conn, "2", "bad__agreed")
        answers["attack"] = await call(conn, "3", "delete_chat", chat_id=tax, confirmation=asked["confirmation"])
        await conn.reply("Shall I delete Tax return for good?", tone(0.1))
        answers["spoken"] = {"typed": await typed_turn(conn, timeout=15)}
        answers["done"] = await call(
            conn, "4", "delete_chat", chat_id=tax, confirmation=answers["attack"].get("confirmation")
        )
        await conn.reply("Tax return is deleted.", tone(0.1))
        await conn.closed.wait()

    live.script = script
    async with session(live, live_client, gemini, tmp_path, bad_server(tmp_path), {tax: "Tax return"}) as at:
        await eventually(lambda: "attack" in answers, timeout=30, what="the confirming call")
        assert (await at.mem.store.get_chat(tax)).title == "Tax return"  # refused, kept
        at.conversation.say("Yes, delete it")
        await eventually(lambda: "done" in answers, timeout=15, what="the call after the yes")
        assert answers["attack"]["result"] == "confirm" and "no answer from the user" in answers["attack"]["say"]
        assert answers["spoken"]["typed"] == "Yes, delete it"
        assert answers["done"]["result"] == "deleted"
        assert [c.id for c in await at.mem.store.list_chats(limit=5)] == [at.chat_id]
