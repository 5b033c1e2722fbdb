"""The Live conversation against the Live-protocol emulator, through the real google-genai SDK:
typed and tool-call exchanges, GoAway and resumption, close codes, re-seeding from the store, and
the faults a session must outlive: unreadable server messages, a stalled setup, stray audio after
a turn, tool calls across a drop, duplicate call ids, a store that is away or refuses turns."""

from __future__ import annotations

import asyncio
import dataclasses
import sqlite3
from typing import Any

import pytest
from google.genai import types

from parla.daemon.chat_memory import ChatMemory
from parla.memory.config import MemoryConfig
from parla.memory.store.refused import RefusedTurns
from parla.voice.errors import LiveSessionFailed
from parla.voice.live.conversation import LiveConversation, SessionEvent
from tests.conftest import eventually, make_turns
from tests.peers.live_emulator import echo, tone, typed_turn

pytestmark = pytest.mark.tier("fast")


async def new_chat(store, turns=()):
    return (await store.create_chat(title="Lisbon trip", turns=turns)).chat


async def stored(store, chat_id) -> list[tuple[str, str]]:
    return [(t.role, t.text) for t in (await store.load_history(chat_id)).full_history]


def conversation(live_client, voice_config, store, chat_id, **kw) -> LiveConversation:
    return LiveConversation(
        live_client,
        voice_config,
        ChatMemory(store, MemoryConfig(), chat_id, RefusedTurns(RefusedTurns.beside(store.path))),
        **kw,
    )


async def has_turns(store, chat_id, n):
    return (await store.get_chat(chat_id)).turn_count >= n


async def test_typed_turn_is_answered_and_stored(live, live_client, voice_config, store):
    chat = await new_chat(store)

    async def script(conn):
        await conn.complete_setup()
        frame = await conn.expect("client_content")
        assert frame.body == {"turns": [{"role": "user", "parts": [{"text": "Hi, I am Ada"}]}], "turn_complete": True}
        await conn.reply("Hello Ada, nice to meet you.", tone(0.2))
        await conn.closed.wait()

    live.script = script
    async with conversation(live_client, voice_config, store, chat.id) as conv:
        conv.say("Hi, I am Ada")
        await eventually(lambda: has_turns(store, chat.id, 2), what="two stored turns")
    history = (await store.load_history(chat.id)).full_history
    assert [(t.role, t.text, t.source) for t in history] == [
        ("user", "Hi, I am Ada", "text"),
        ("model", "Hello Ada, nice to meet you.", "voice"),
    ]
    setup = live.connections[0].setup
    assert setup["model"] == f"models/{voice_config.live_model}"
    assert setup["input_audio_transcription"] == {} and setup["output_audio_transcription"] == {}
    assert setup["context_window_compression"]["sliding_window"] == {"target_tokens": 32000}
    assert setup["generation_config"]["speech_config"]["voice_config"]["prebuilt_voice_config"]["voice_name"] == "Puck"


class Clock:
    """A real tool for the session tests: the time, or a slow answer that can be cancelled."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.cancelled = asyncio.Event()

    def declarations(self) -> list[types.FunctionDeclaration]:
        return [
            types.FunctionDeclaration(
                name="get_time",
                description="The current time in a city.",
                parameters_json_schema={"type": "object", "properties": {"city": {"type": "string"}}},
            ),
            types.FunctionDeclaration(
                name="slow", description="Takes long.", parameters_json_schema={"type": "object"}
            ),
        ]

    async def call(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        self.calls.append((name, args))
        if name == "slow":
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                self.cancelled.set()
                raise
        return {"city": args.get("city"), "time": "14:05"}


async def test_tool_call_round_trip_and_cancellation(live, live_client, voice_config, store):
    chat = await new_chat(store)
    clock = Clock()

    async def script(conn):
        await conn.complete_setup()
        await conn.tool_call({"id": "call-1", "name": "get_time", "args": {"city": "Lisbon"}})
        frame = await conn.expect("tool_response")
        assert frame.body["function_responses"] == [
            {"id": "call-1", "name": "get_time", "response": {"city": "Lisbon", "time": "14:05"}}
        ]
        await conn.tool_call({"id": "call-2", "name": "slow", "args": {}})
        await asyncio.sleep(0.2)
        await conn.cancel_tool_calls("call-2")
        await conn.tool_call({"id": "call-3", "name": "get_time", "args": {"city": "Rome"}})
        frame = await conn.expect("tool_response")
        assert frame.body["function_responses"][0]["id"] == "call-3"
        await conn.reply("It is five past two in Rome.", tone(0.1))
        await conn.closed.wait()

    live.script = script
    async with conversation(live_client, voice_config, store, chat.id, tools=clock):
        await eventually(lambda: has_turns(store, chat.id, 1), what="the answer")
        await asyncio.wait_for(clock.cancelled.wait(), 2)
    conn = live.connections[0]
    names = [d["name"] for d in conn.setup["tools"][0]["function_declarations"]]
    assert names == ["get_time", "slow"]
    assert [f.body["function_responses"][0]["id"] for f in conn.of_kind("tool_response")] == ["call-1", "call-3"]
    assert await stored(store, chat.id) == [("model", "It is five past two in Rome.")]


async def test_goaway_waits_for_the_reply_then_resumes_with_the_newest_handle(live, live_client, voice_config, store):
    chat = await new_chat(store)
    events: list[SessionEvent] = []

    async def script(conn):
        await conn.complete_setup()
        if conn.index == 0:
            await conn.resumption("handle-1")
            await conn.expect("client_content")
            await conn.reply("Lisbon has seven", tone(0.1), complete=False)
            await conn.go_away(30)
            await conn.resumption("handle-2")
            await conn.resumption("not-yet", resumable=False)
            await asyncio.sleep(0.3)
            assert not conn.closed.is_set(), "the client left in the middle of a reply"
            await conn.reply("hills and a river.", tone(0.1))
            await conn.closed.wait()
        else:
            await conn.expect("client_content")
            await conn.reply("Yes, trams too.", tone(0.1))
            await conn.closed.wait()

    live.script = script
    async with conversation(live_client, voice_config, store, chat.id, on_event=events.append) as conv:
        conv.say("Tell me about Lisbon")
        second = await live.wait_connections(2)
        conv.say("Are there trams?")
        await eventually(lambda: has_turns(store, chat.id, 4), what="four turns")
    assert second.handle == "handle-2"
    assert second.of_kind("client_content")[0].body["turns"][0]["parts"][0]["text"] == "Are there trams?"
    assert await stored(store, chat.id) == [
        ("user", "Tell me about Lisbon"),
        ("model", "Lisbon has seven hills and a river."),
        ("user", "Are there trams?"),
        ("model", "Yes, trams too."),
    ]
    assert [e.kind for e in events if e.kind not in ("turn", "stored", "user_turn", "model_turn_over")][:3] == [
        "connected",
        "goaway",
        "resumed",
    ]
    assert [line for e in events if e.kind == "turn" for line in e.detail.splitlines()][:2] == [
        "User: Tell me about Lisbon",
        "Assistant: Lisbon has seven hills and a river.",
    ]
    assert conv.status.resumed == 1


async def test_goaway_deadline_reconnects_while_the_user_is_silent(live, live_client, store):
    from parla.voice.config import VoiceConfig

    config = VoiceConfig(live_url=live.url, goaway_margin_s=0.5)
    chat = await new_chat(store)

    async def script(conn):
        await conn.complete_setup()
        if conn.index == 0:
            await conn.resumption("h")
            await conn.expect("client_content")
            await conn.reply("A long", tone(0.1), complete=False)
            await conn.go_away(0.8)
            await conn.interrupted()  # the model stopped: nothing is speaking any more
        await conn.closed.wait()

    live.script = script
    async with conversation(live_client, config, store, chat.id) as conv:
        conv.say("hello")
        loop = asyncio.get_running_loop()
        started = loop.time()
        second = await live.wait_connections(2, timeout=3)
        assert loop.time() - started < 1.0
    assert second.handle == "h"


@pytest.mark.parametrize("close", [1011, 1006])
async def test_dropped_connection_retries_with_the_handle_and_loses_nothing(
    live, live_client, voice_config, store, close
):
    chat = await new_chat(store)

    async def script(conn):
        await conn.complete_setup()
        await conn.resumption(f"h{conn.index}")
        frame = await conn.expect("client_content")
        text = frame.body["turns"][0]["parts"][0]["text"]
        if conn.index == 0:
            await conn.reply(f"You said {text} and then", tone(0.1), complete=False)
            if close == 1006:
                await conn.drop()
            else:
                await conn.close(1011, "Internal error encountered.")
            return
        await conn.reply(f"You said {text}.", tone(0.1))
        await conn.closed.wait()

    live.script = script
    async with conversation(live_client, voice_config, store, chat.id) as conv:
        conv.say("one")
        second = await live.wait_connections(2)
        conv.say("two")
        await eventually(lambda: has_turns(store, chat.id, 4), what="four turns")
    assert second.handle == "h0" and not second.of_kind("client_content")[1:]
    history = (await store.load_history(chat.id)).full_history
    assert [(t.role, t.text, t.interrupted) for t in history] == [
        ("user", "one", False),
        ("model", "You said one and then", True),
        ("user", "two", False),
        ("model", "You said two.", False),
    ]
    assert conv.status.reconnects == 1 and "close" in (conv.status.last_error or "")


async def compacted_chat(store, compactor):
    """A chat with a rolling summary and a tail, as the store holds it after compaction."""
    chat = await new_chat(store, make_turns(40))
    await compactor.compact(chat.id)
    return await store.get_chat(chat.id)


@pytest.mark.parametrize("model", ["gemini-3.8-live", "gemini-3.1-flash-live-preview"])
async def test_without_a_handle_the_new_session_is_seeded_from_the_store(
    live, live_client, voice_config, store, compactor, model
):
    chat = await compacted_chat(store, compactor)
    assert chat.rolling_summary and chat.summarized_through > 0

    async def script(conn):
        await conn.complete_setup()
        if conn.index == 0:
            await typed_turn(conn)  # after the seed
            await conn.reply("Noted.", tone(0.1))
            await conn.drop()  # no handle was ever given
        await conn.closed.wait()

    live.script = script
    config = voice_config.model_copy(update={"live_model": model})
    async with conversation(live_client, config, store, chat.id) as conv:
        conv.say("Remember the tomatoes")
        second = await live.wait_connections(2)
        await asyncio.sleep(0.3)
    tail = (await store.load_history(chat.id)).tail
    # 3.8 leaves the seed open (a completed turn would ask for an answer); 3.1 closes its initial history
    closes_history = model.startswith("gemini-3.1")
    for conn, expected_tail in ((live.connections[0], tail[:-2]), (second, tail)):
        assert conn.handle is None and conn.refused is None
        assert chat.rolling_summary[:200] in conn.system_instruction
        assert ("history_config" in conn.setup) is closes_history
        seed = conn.frames[0]
        assert seed.kind == "client_content" and seed.body["turn_complete"] is closes_history
        assert [(t["role"], t["parts"][0]["text"]) for t in seed.body["turns"]] == [
            (t.role, t.text) for t in expected_tail
        ]
    assert [t.text for t in tail[-2:]] == ["Remember the tomatoes", "Noted."]


async def test_1007_never_resends_the_same_thing(live, live_client, voice_config, store, compactor):
    chat = await compacted_chat(store, compactor)

    async def script(conn):
        await conn.complete_setup()
        if conn.index == 0:
            await conn.resumption("poisoned")
            await conn.close(1007, "Request contains an invalid argument.")
        elif conn.index == 1:
            await conn.expect("client_content")  # the fresh seed, then refused again

            await conn.close(1007, "Request contains an invalid argument.")
        else:
            await conn.closed.wait()

    live.script = script
    async with conversation(live_client, voice_config, store, chat.id):
        third = await live.wait_connections(3)
        await asyncio.sleep(0.1)
    first, second = live.connections[0], live.connections[1]
    assert second.handle is None and third.handle is None
    # After one refusal: a fresh seed with the tail; after a second: the memory block only.
    assert second.of_kind("client_content") and second.of_kind("client_content")[0].body["turn_complete"] is False
    assert third.of_kind("client_content") == []
    assert chat.rolling_summary[:200] in third.system_instruction
    assert first.handle is None


async def test_gives_up_after_consecutive_failures_and_says_why(live, live_client, store):
    from parla.voice.config import VoiceConfig

    config = VoiceConfig(live_url=live.url, reconnect_attempts=3, reconnect_delay=0.01, reconnect_max_delay=0.02)
    chat = await new_chat(store)
    events: list[SessionEvent] = []

    async def script(conn):
        await conn.complete_setup()
        await conn.close(1011, "Internal error encountered.")

    live.script = script
    async with conversation(live_client, config, store, chat.id, on_event=events.append) as conv:
        with pytest.raises(LiveSessionFailed, match=r"failed 4 times in a row \(last: close 1011: Internal error"):
            await asyncio.wait_for(conv.wait(), 5)
    assert len(live.connections) == 4
    assert [e.kind for e in events].count("reconnecting") == 3 and events[-1].kind == "gave_up"


async def test_policy_close_and_a_bad_key_give_up_with_the_servers_reason(live, live_client, voice_config, store):
    chat = await new_chat(store)

    async def script(conn):
        await conn.close(1008, "models/nope is not found for API version v1beta")

    live.script = script
    async with conversation(live_client, voice_config, store, chat.id) as conv:
        with pytest.raises(LiveSessionFailed, match="models/nope is not found.*PARLA_LIVE_MODEL"):
            await asyncio.wait_for(conv.wait(), 5)
    assert len(live.connections) == 1

    live.api_key = "another-key"
    async with conversation(live_client, voice_config, store, chat.id) as conv:
        with pytest.raises(LiveSessionFailed, match="refused the session three times.*API key not valid"):
            await asyncio.wait_for(conv.wait(), 5)


@pytest.mark.tier("postgres")
async def test_an_unreachable_store_keeps_the_turns_and_retries_in_order(
    live, live_client, voice_config, supabase, tmp_path
):
    """Supabase away: the turns wait in its local outbox (saved, as far as the session goes: the
    saver never spins on them) and reach the server in order once it answers again."""
    from tests.conftest import signed_in_store

    async with await signed_in_store(supabase, tmp_path) as store:
        store.retry = dataclasses.replace(store.retry, delay=0.01, max_delay=0.2)
        chat = await new_chat(store)
        memory = ChatMemory(store, MemoryConfig(), chat.id, RefusedTurns(tmp_path / "refused.jsonl"))
        events: list[SessionEvent] = []
        live.script = echo
        async with LiveConversation(live_client, voice_config, memory, on_event=events.append) as conv:
            await live.wait_connections(1)
            supabase.shim.refuse()  # the server is away: a temporary failure
            conv.say("How are you?")
            await eventually(lambda: _queued(store, 1), what="the first exchange waiting in the outbox")
            conv.say("Still there?")
            await eventually(lambda: _queued(store, 2), what="both exchanges waiting in the outbox")
            await eventually(lambda: conv.status.unsaved_turns == 0, what="the saver done with them")
            supabase.shim.recover()
            await eventually(lambda: has_turns(store, chat.id, 4), timeout=10, what="the turns once it is back")
        assert await stored(store, chat.id) == [
            ("user", "How are you?"),
            ("model", "You said How are you?."),
            ("user", "Still there?"),
            ("model", "You said Still there?."),
        ]
        assert (await store.outbox.depth())[0] == 0
    assert not any(e.kind == "save_failed" for e in events)
    assert conv.status.unsaved_turns == 0 and conv.status.refused_turns == 0
    assert not (tmp_path / "refused.jsonl").exists()


async def _queued(store, n: int) -> bool:
    return (await store.outbox.depth())[0] >= n


async def test_turns_refused_for_good_are_kept_locally_and_block_nothing(
    live, live_client, voice_config, store, tmp_path
):
    # SQLite: on Supabase a chat deleted on another device comes back with what was said in it
    # (tests/memory/store/test_two_devices.py)
    japan, kitchen = await new_chat(store), await new_chat(store)
    refused = RefusedTurns(tmp_path / "refused.jsonl")
    memory = ChatMemory(store, MemoryConfig(), japan.id, refused)
    events: list[SessionEvent] = []
    live.script = echo
    async with LiveConversation(live_client, voice_config, memory, on_event=events.append) as conv:
        conv.say("one")
        await eventually(lambda: has_turns(store, japan.id, 2), what="the first exchange")
        await store.delete_chat(japan.id)  # deleted from another device: every write to it fails for good
        conv.say("two")
        await eventually(lambda: conv.status.refused_turns == 2, what="the refused exchange")
        conv.switch_to(ChatMemory(store, MemoryConfig(), kitchen.id, refused))
        await live.wait_connections(2)
        conv.say("three")
        await eventually(lambda: has_turns(store, kitchen.id, 2), what="the next chat's exchange")
    assert await stored(store, kitchen.id) == [("user", "three"), ("model", "You said three.")]
    kept = refused.read()
    assert [(k.chat_id, k.turn.role, k.turn.text) for k in kept] == [
        (japan.id, "user", "two"),
        (japan.id, "model", "You said two."),
    ]
    assert all(k.reason.startswith("ChatNotFound: no chat matches") for k in kept)
    assert refused.count() == 2 and oct(refused.path.stat().st_mode & 0o777) == "0o600"
    (detail,) = [e.detail for e in events if e.kind == "save_refused"]
    assert detail.startswith(f"2 turns kept in {refused.path}: ChatNotFound")


async def test_turns_not_stored_when_the_session_closes_are_kept_locally(live, live_client, store, tmp_path):
    """The store cannot take the turns before the session closes (another process holds the
    SQLite file's write lock): they are kept on this machine with the reason, not dropped."""
    from parla.voice.config import VoiceConfig

    config = VoiceConfig(live_url=live.url, save_drain_s=0.5)
    refused = RefusedTurns(tmp_path / "kept.jsonl")
    live.script = echo
    chat = await new_chat(store)
    other = sqlite3.connect(store.path, isolation_level=None)
    try:
        async with LiveConversation(live_client, config, ChatMemory(store, MemoryConfig(), chat.id, refused)) as conv:
            await live.wait_connections(1)
            other.execute("BEGIN IMMEDIATE")  # held until the session has closed
            conv.say("Remember the tomatoes")
            await eventually(lambda: conv.status.unsaved_turns == 2, what="the exchange waiting")
    finally:
        other.close()
    assert conv.status.unsaved_turns == 0 and conv.status.refused_turns == 2
    kept = refused.read()
    assert [(k.chat_id, k.turn.text) for k in kept] == [
        (chat.id, "Remember the tomatoes"),
        (chat.id, "You said Remember the tomatoes."),
    ]
    assert all(k.reason.startswith("not stored before the session closed") for k in kept)


async def test_unknown_message_types_are_skipped_and_broken_json_reconnects(live, live_client, voice_config, store):
    chat = await new_chat(store)

    async def script(conn):
        await conn.complete_setup()
        await conn.resumption(f"h{conn.index}")
        if conn.index == 0:
            for _ in range(voice_config.reconnect_attempts + 2):  # more than would make it give up
                await conn.send({"someFutureMessage": {"x": 1}})  # the SDK raises TypeError on it
            frame = await conn.expect("client_content")
            await conn.reply(f"You said {frame.body['turns'][0]['parts'][0]['text']}.", tone(0.05))
            await conn.send_raw(b'{"serverContent": ')  # broken JSON: ValueError in the SDK
        else:
            frame = await conn.expect("client_content")
            await conn.reply(f"You said {frame.body['turns'][0]['parts'][0]['text']}.", tone(0.05))
        await conn.closed.wait()

    live.script = script
    async with conversation(live_client, voice_config, store, chat.id) as conv:
        conv.say("hello")
        second = await live.wait_connections(2)
        conv.say("again")
        await eventually(lambda: has_turns(store, chat.id, 4), what="the answers")
    assert second.handle == "h0"
    assert await stored(store, chat.id) == [
        ("user", "hello"),
        ("model", "You said hello."),
        ("user", "again"),
        ("model", "You said again."),
    ]
    assert conv.status.reconnects == 1 and "could not be read" in (conv.status.last_error or "")


async def test_a_server_that_never_completes_the_setup_times_out_and_counts_as_a_failure(live, live_client, store):
    from parla.voice.config import VoiceConfig

    config = VoiceConfig(live_url=live.url, live_setup_timeout_s=0.3, reconnect_delay=0.01)
    chat = await new_chat(store)

    async def script(conn):
        if conn.index > 0:
            await conn.complete_setup()
            frame = await conn.expect("client_content")
            await conn.reply(f"You said {frame.body['turns'][0]['parts'][0]['text']}.", tone(0.05))
        await conn.closed.wait()  # the first connection stalls before setupComplete

    live.script = script
    events: list[SessionEvent] = []
    async with conversation(live_client, config, store, chat.id, on_event=events.append) as conv:
        conv.say("anyone there?")
        await eventually(lambda: has_turns(store, chat.id, 2), what="the answer on the second connection")
    assert len(live.connections) == 2 and live.connections[0].closed.is_set()
    assert conv.status.reconnects == 1
    reconnecting = [e.detail for e in events if e.kind == "reconnecting"]
    assert len(reconnecting) == 1 and "did not complete the setup within 0.3s" in reconnecting[0]


@pytest.mark.parametrize("stray", ["audio", "transcription"])
async def test_stray_output_after_turn_complete_does_not_hold_a_goaway_reconnect(live, live_client, store, stray):
    from parla.voice.config import VoiceConfig

    config = VoiceConfig(live_url=live.url, model_silence_s=0.3)
    chat = await new_chat(store)

    async def script(conn):
        await conn.complete_setup()
        if conn.index == 0:
            await conn.resumption("h")
            await conn.expect("client_content")
            await conn.reply("Sure.", tone(0.05))
            # no turnComplete ever follows what comes next
            if stray == "audio":
                await conn.model_audio(tone(0.04))
            else:  # transcriptions are not ordered with turnComplete: a late fragment
                await conn.content(outputTranscription={"text": " Really."})
            await conn.go_away(30)
        await conn.closed.wait()

    live.script = script
    async with conversation(live_client, config, store, chat.id) as conv:
        conv.say("hello")
        loop = asyncio.get_running_loop()
        await eventually(lambda: has_turns(store, chat.id, 2), what="the answer")
        started = loop.time()
        second = await live.wait_connections(2, timeout=3)
        assert loop.time() - started < 1.5
        assert conv.idle_for() > 0
    assert second.handle == "h"
    # a late fragment is the end of the turn it trails, not a turn of its own
    answer = "Sure. Really." if stray == "transcription" else "Sure."
    assert await stored(store, chat.id) == [("user", "hello"), ("model", answer)]


class Lookup(Clock):
    """A tool whose answer waits for the test to release it (it outlives a connection)."""

    def __init__(self) -> None:
        super().__init__()
        self.release = asyncio.Event()

    def declarations(self) -> list[types.FunctionDeclaration]:
        return [types.FunctionDeclaration(name="lookup", description="Looks up.", parameters_json_schema={})]

    async def call(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        self.calls.append((name, args))
        await self.release.wait()
        return {"found": "the tram runs until midnight"}


@pytest.mark.parametrize("model", ["gemini-3.8-live", "gemini-3.1-flash-live-preview"])
async def test_a_tool_call_in_flight_across_a_drop_is_answered_on_the_next_connection(
    live, live_client, voice_config, store, model
):
    chat = await new_chat(store)
    lookup = Lookup()

    async def script(conn):
        await conn.complete_setup()
        await conn.resumption(f"h{conn.index}")
        if conn.index == 0:
            await conn.tool_call({"id": "call-1", "name": "lookup", "args": {}})
            await asyncio.sleep(0.1)
            await conn.drop()
            return
        said.append(await typed_turn(conn))  # the result, as conversation: it may be answered
        await conn.reply("The tram runs until midnight.", tone(0.05))
        await conn.closed.wait()

    said: list[str] = []
    live.script = script
    config = voice_config.model_copy(update={"live_model": model})
    async with conversation(live_client, config, store, chat.id, tools=lookup) as conv:
        second = await live.wait_connections(2)
        await eventually(lambda: conv.status.connected, what="the resumed session")
        assert conv.idle_for() == 0.0  # the call is still running
        lookup.release.set()
        await eventually(lambda: has_turns(store, chat.id, 1), what="the answer")
    assert second.handle == "h0" and second.refused is None
    (text,) = said
    assert "lookup" in text and "the tram runs until midnight" in text
    assert second.ignored == [] and second.of_kind("tool_response") == []
    assert await stored(store, chat.id) == [("model", "The tram runs until midnight.")]


async def test_duplicate_tool_call_ids_are_each_tracked_and_cancelled(live, live_client, voice_config, store):
    chat = await new_chat(store)
    clock = Clock()

    async def script(conn):
        await conn.complete_setup()
        await conn.tool_call({"id": "dup", "name": "slow", "args": {}}, {"id": "dup", "name": "get_time", "args": {}})
        frame = await conn.expect("tool_response")
        assert frame.body["function_responses"][0]["name"] == "get_time"
        await conn.cancel_tool_calls("dup")
        await conn.closed.wait()

    live.script = script
    async with conversation(live_client, voice_config, store, chat.id, tools=clock) as conv:
        await live.wait_connections(1)
        await eventually(lambda: len(clock.calls) == 2, what="both calls")
        await asyncio.wait_for(clock.cancelled.wait(), 2)
        assert conv._tool_calls.pending == 0


async def test_a_failing_event_handler_stops_nothing(live, live_client, voice_config, store):
    chat = await new_chat(store)

    def broken(event: SessionEvent) -> None:
        raise RuntimeError("observer bug")

    live.script = echo
    async with conversation(live_client, voice_config, store, chat.id, on_event=broken) as conv:
        conv.say("hello")
        await eventually(lambda: has_turns(store, chat.id, 2), what="the exchange")
    assert await stored(store, chat.id) == [("user", "hello"), ("model", "You said hello.")]
