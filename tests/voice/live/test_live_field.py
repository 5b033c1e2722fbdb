"""What the field hits on the real service, each reproduced on the Live emulator through the real
google-genai SDK: pongs that come late, a resumption refused after the connection's end, the user
cutting the model off while a tool runs, and tool results the model could read out as JSON."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from google.genai import types

from parla.daemon.chat_memory import ChatMemory
from parla.daemon.memory_services import gemini_client
from parla.daemon.settings import Settings
from parla.memory.config import MemoryConfig
from parla.memory.store.refused import RefusedTurns
from parla.voice.config import VoiceConfig
from parla.voice.live.conversation import LiveConversation
from tests.conftest import eventually
from tests.peers.live_emulator import LiveEmulator, echo, tone, typed_turn

pytestmark = pytest.mark.tier("fast")


# The product's keepalive, scaled down 100 times so that a test takes a second: a ping every 0.2 s
# stands for one every 20 s.
SCALE = 0.01


def scaled_settings(live: LiveEmulator, gemini, **kw) -> Settings:
    defaults = Settings.model_fields
    interval = defaults["live_ping_interval_s"].default * SCALE
    timeout = defaults["live_ping_timeout_s"].default * SCALE
    return Settings(
        gemini_api_key=live.api_key,
        gemini_base_url=gemini.base_url,
        live_url=live.url,
        live_ping_interval_s=interval,
        live_ping_timeout_s=timeout,
        reconnect_delay=0.05,
        reconnect_max_delay=0.2,
        **kw,
    )


def conversation_of(client, config: VoiceConfig, store, chat_id, **kw) -> LiveConversation:
    memory = ChatMemory(store, MemoryConfig(), chat_id, RefusedTurns(RefusedTurns.beside(store.path)))
    return LiveConversation(client, config, memory, **kw)


@pytest.fixture
def trust_emulator(live_certificate, monkeypatch) -> None:
    """The product's client trusts what SSL_CERT_FILE names (the SDK reads it), here the emulator's."""
    monkeypatch.setenv("SSL_CERT_FILE", str(live_certificate[0]))


async def test_pongs_later_than_websockets_default_timeout_keep_the_session(
    live_certificate, trust_emulator, gemini, store
):
    # 30 s late at full scale: websockets' default (20 s ping timeout) closes such a session with
    # 1011 "keepalive ping timeout" while the service still answers.
    chat = (await store.create_chat(title="late pongs")).chat
    async with LiveEmulator(*live_certificate, pong_delay_s=30 * SCALE, script=echo) as live:
        settings = scaled_settings(live, gemini)
        async with conversation_of(gemini_client(settings), settings, store, chat.id) as conv:
            await eventually(lambda: conv.status.connected, what="a session")
            await asyncio.sleep(settings.live_ping_interval_s * 8)  # several pings answered late
            conv.say("are you there?")
            await eventually(lambda: live.connections[0].sent[-1:] == [{"serverContent": {"turnComplete": True}}])
            assert conv.status.reconnects == 0 and len(live.connections) == 1
    assert live.errors == []


async def test_a_dead_link_is_still_found_by_its_missing_pongs(live_certificate, trust_emulator, gemini, store):
    chat = (await store.create_chat(title="dead link")).chat
    async with LiveEmulator(*live_certificate, pong_delay_s=None, script=echo) as live:
        settings = scaled_settings(live, gemini)
        async with conversation_of(gemini_client(settings), settings, store, chat.id) as conv:
            await live.wait_connections(2, timeout=5)  # the pongs never came: the link counts as dead
            assert conv.status.reconnects == 1


def seed_texts(conn) -> list[tuple[str, str]]:
    (frame,) = [f for f in conn.of_kind("client_content") if not f.body.get("turn_complete") or f.seed]
    return [(t["role"], t["parts"][0]["text"]) for t in frame.body["turns"]]


@pytest.mark.parametrize("model", ["gemini-3.8-live", "gemini-3.1-flash-live-preview"])
async def test_a_resumption_refused_after_the_connection_ends_starts_fresh_from_the_store(
    live, live_client, voice_config, store, model
):
    """The service ends each connection (GoAway, then 1011 "Deadline expired"); the resumption that
    follows can be refused with 1007, as users report (https://discuss.ai.google.dev/t/186392).
    Nothing said before may be lost: the fresh session is seeded from the store with every turn,
    the unanswered last words included."""
    chat = (await store.create_chat(title="hotel")).chat

    async def script(conn):
        await conn.complete_setup()
        if conn.index == 0:
            await conn.resumption("h0")
            await conn.heard("Book the hotel near the river.")
            await conn.reply("Which dates?", tone(0.05))
            await conn.heard("From Friday to Sunday.")  # heard, not answered yet
            live.handles.clear()  # the service forgot the session
            await conn.go_away(0.2)
            await asyncio.sleep(0.2)
            await conn.close(1011, "Deadline expired before operation could complete.")
            return
        await conn.closed.wait()

    live.script = script
    config = voice_config.model_copy(update={"live_model": model})
    async with conversation_of(live_client, config, store, chat.id) as conv:
        fresh = await live.wait_connections(2, timeout=5)
        await eventually(lambda: conv.status.connected and conv.status.connections == 2, what="a fresh session")
    assert live.setups_refused == ["session resumption handle is not valid"]
    assert fresh.handle is None
    said = [
        ("user", "Book the hotel near the river."),
        ("model", "Which dates?"),
        ("user", "From Friday to Sunday."),
    ]
    assert seed_texts(fresh) == said
    assert [(t.role, t.text) for t in (await store.load_history(chat.id)).full_history] == said


class Timetable:
    """A tool whose answer (a nested result) waits until the test releases it."""

    def __init__(self) -> None:
        self.release = asyncio.Event()

    def declarations(self) -> list[types.FunctionDeclaration]:
        return [types.FunctionDeclaration(name="timetable", description="Tram times.", parameters_json_schema={})]

    async def call(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        await self.release.wait()
        return {"line": "tram 28", "last_run": {"time": "23:40", "from": "Martim Moniz"}, "stops": ["Baixa", "Alfama"]}


@pytest.mark.parametrize("model", ["gemini-3.8-live", "gemini-3.1-flash-live-preview"])
async def test_a_tool_result_given_as_conversation_is_words_not_json(live, live_client, voice_config, store, model):
    """A result for a call an earlier connection made reaches the model as conversation; as JSON
    the model reads it out braces and quotes included, as users report: it goes as words."""
    chat = (await store.create_chat(title="trams")).chat
    tool = Timetable()
    said: list[str] = []

    async def script(conn):
        await conn.complete_setup()
        await conn.resumption(f"h{conn.index}")
        if conn.index == 0:
            await conn.tool_call({"id": "call-1", "name": "timetable", "args": {}})
            await asyncio.sleep(0.1)
            await conn.drop()
            return
        said.append(await typed_turn(conn))
        await conn.closed.wait()

    live.script = script
    config = voice_config.model_copy(update={"live_model": model})
    async with conversation_of(live_client, config, store, chat.id, tools=tool):
        await live.wait_connections(2)
        tool.release.set()
        await eventually(lambda: said, what="the result as conversation")
    (text,) = said
    assert not set(text) & set('{}[]"'), text
    for value in ("tram 28", "23:40", "Martim Moniz", "Baixa", "Alfama", "timetable"):
        assert value in text


@pytest.mark.parametrize("model", ["gemini-3.8-live", "gemini-3.1-flash-live-preview"])
async def test_interrupted_while_a_tool_runs_still_answers_the_call(live, live_client, voice_config, store, model):
    """The user cuts the model off while its tool runs: the service's turn waits on the call's
    result (livekit/agents#6600: a result dropped after an interruption stalls the session), so
    the result still goes out on that connection, and both model turns are stored."""
    chat = (await store.create_chat(title="trams")).chat
    tool = Timetable()

    async def script(conn):
        await conn.complete_setup()
        await conn.heard("When is the last tram?")
        await conn.tool_call({"id": "call-1", "name": "timetable", "args": {}})
        await conn.reply("Let me look that", tone(0.1), complete=False)
        await conn.heard(" wait")
        await conn.interrupted()
        await conn.turn_complete()
        frame = await conn.expect("tool_response")
        assert frame.body["function_responses"][0]["id"] == "call-1"
        await conn.reply("The last 28 leaves at 23:40.", tone(0.05))
        await conn.closed.wait()

    live.script = script
    config = voice_config.model_copy(update={"live_model": model})
    async with conversation_of(live_client, config, store, chat.id, tools=tool) as conv:
        await eventually(lambda: live.connections and live.connections[0].cut_replies == 0 and conv._tool_calls.pending)
        await eventually(lambda: any("interrupted" in m.get("serverContent", {}) for m in live.connections[0].sent))
        await asyncio.sleep(0.1)
        assert conv.idle_for() == 0.0  # the call still runs: no idle timeout, no switch may cut it
        tool.release.set()
        await eventually(lambda: has_turns(store, chat.id, 4), what="four stored turns")
    history = (await store.load_history(chat.id)).full_history
    assert [(t.role, t.text, t.interrupted) for t in history] == [
        ("user", "When is the last tram?", False),
        ("model", "Let me look that", True),
        ("user", "wait", False),
        ("model", "The last 28 leaves at 23:40.", False),
    ]
    assert conv.status.reconnects == 0


async def has_turns(store, chat_id, n: int) -> bool:
    return (await store.get_chat(chat_id)).turn_count >= n
