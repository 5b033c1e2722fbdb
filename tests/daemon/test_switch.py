"""Switching chats by meaning inside a spoken conversation wired as the daemon wires it: the
emulator's model calls switch_chat, the answer is spoken, the session closes and a new one opens
seeded with the target chat's memory, and later turns are stored in that chat."""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path

import pytest

from parla.daemon.conversation import spoken_conversation
from parla.daemon.memory_services import MemoryServices, open_memory
from parla.daemon.settings import Settings
from parla.memory.imports.importer import chat_id_of, parse_line, turns_of
from parla.records.turn import Turn
from tests.conftest import eventually
from tests.peers.live_emulator import rms, tone, typed_turn
from tests.peers.pulse import speech

pytestmark = pytest.mark.tier("audio")

DATA = Path(__file__).parents[1] / "data" / "search_chats.jsonl"


def settings_for(live, gemini, tmp_path) -> Settings:
    return Settings(
        store_path=tmp_path / "parla.db",
        gemini_api_key=live.api_key,
        gemini_base_url=gemini.base_url,
        live_url=live.url,
        summarizer="offline",
    )


async def load_chats(mem: MemoryServices, titles: dict[str, str]) -> dict[str, str]:
    """The search set's chats, described for search as an import leaves them; returns id by name."""
    ids = {}
    for n, line in enumerate(DATA.read_text().splitlines(), start=1):
        chat = parse_line(n, line)
        chat_id = chat_id_of(chat)
        await mem.store.create_chat(chat_id=chat_id, title=titles.get(chat.id or ""), turns=turns_of(chat, chat_id))
        await mem.compactor.compact(chat_id)
        ids[chat.id or ""] = chat_id
    return ids


def response_of(frame) -> dict:
    return frame.body["function_responses"][0]["response"]


async def test_switch_by_meaning_reconnects_into_the_target_chat(
    pulse, live, gemini, live_certificate, tmp_path, monkeypatch
):
    monkeypatch.setenv("SSL_CERT_FILE", str(live_certificate[0]))
    answers: list[dict] = []

    async def script(conn):
        await conn.complete_setup()
        if conn.index == 0:
            await conn.expect("client_content")  # the seed of the sourdough chat
            await conn.tool_call({"id": "s1", "name": "switch_chat", "args": {"query": "the Japan trip"}})
            answers.append(response_of(await conn.expect("tool_response")))
            await conn.reply(answers[-1]["say"], tone(0.2))
        else:
            await conn.expect("client_content")  # the Japan chat's tail
            frame = await conn.expect("client_content")
            assert frame.body["turns"][0]["parts"][0]["text"] == "How long in Kyoto?"
            await conn.reply("Three days in Kyoto.", tone(0.1))
        await conn.closed.wait()

    live.script = script
    async with open_memory(settings_for(live, gemini, tmp_path)) as mem:
        ids = await load_chats(mem, {"japan-trip": "Japan trip"})
        japan, sourdough = ids["japan-trip"], ids["sourdough"]
        async with spoken_conversation(mem, sourdough) as conversation:
            second = await live.wait_connections(2)
            conversation.say("How long in Kyoto?")
            await eventually(lambda: _turns(mem, japan, 8), what="the new exchange in the Japan chat")
        japan_history = (await mem.store.load_history(japan)).full_history
        sourdough_history = (await mem.store.load_history(sourdough)).full_history

    assert answers[0]["result"] == "switching" and answers[0]["title"] == "Japan trip"
    assert answers[0]["say"].startswith("Switching to Japan trip, last talked ")
    # The announcement belongs to the chat it was said in; the new exchange to the Japan chat.
    assert sourdough_history[-1].text == answers[0]["say"]
    assert [t.text for t in japan_history[-2:]] == ["How long in Kyoto?", "Three days in Kyoto."]
    # The new session starts fresh from the Japan chat's memory, not from the old session.
    assert second.handle is None
    seed = second.of_kind("client_content")[0].body
    assert seed["turn_complete"] is False
    assert [t["parts"][0]["text"] for t in seed["turns"]] == [t.text for t in japan_history[:6]]
    assert "switch_chat" in second.system_instruction and "settled truth" in second.system_instruction


async def test_ambiguous_then_chat_id_and_tool_errors(pulse, live, gemini, live_certificate, tmp_path, monkeypatch):
    monkeypatch.setenv("SSL_CERT_FILE", str(live_certificate[0]))
    replies: list[dict] = []

    async def script(conn):
        await conn.complete_setup()
        if conn.index == 0:
            calls = [
                {"id": "a", "name": "switch_chat", "args": {"query": "Japan"}},
                {"id": "b", "name": "switch_chat", "args": {}},
                {"id": "c", "name": "switch_chat", "args": {"query": "the quantum chromodynamics lecture"}},
                {"id": "d", "name": "teleport", "args": {}},
                {"id": "e", "name": "list_chats", "args": {"limit": 50}},
            ]
            for call in calls:
                await conn.tool_call(call)
                replies.append(response_of(await conn.expect("tool_response")))
            chosen = replies[0]["candidates"][1]["chat_id"]
            await conn.tool_call({"id": "f", "name": "switch_chat", "args": {"chat_id": chosen}})
            replies.append(response_of(await conn.expect("tool_response")))
            await conn.reply("Switching.", tone(0.1))
        await conn.closed.wait()

    live.script = script
    async with open_memory(settings_for(live, gemini, tmp_path)) as mem:
        ids = await load_chats(mem, {})
        # A second trip to Japan makes "Japan" ambiguous.
        may = [
            Turn.of("user", "Planning another trip to Japan in May, Osaka and Kyoto this time."),
            Turn.of("model", "May has fewer crowds than April in Kyoto."),
        ]
        second_japan = (await mem.store.create_chat(title="Japan in May", turns=may)).chat.id
        await mem.compactor.compact(second_japan)
        async with spoken_conversation(mem, ids["piano"]):
            await live.wait_connections(2)

    ambiguous, missing, none, unknown, too_many, switched = replies
    assert ambiguous["result"] == "ambiguous"
    assert {c["chat_id"] for c in ambiguous["candidates"]} >= {ids["japan-trip"], second_japan}
    assert "give either query" in missing["error"]
    assert none["result"] == "none" and "new_chat" in none["say"]
    assert "there is no tool 'teleport'" in unknown["error"] and "switch_chat" in unknown["error"]
    assert "bad arguments for list_chats: limit" in too_many["error"]
    assert switched["result"] == "switching" and switched["chat_id"] == ambiguous["candidates"][1]["chat_id"]


async def _turns(mem, chat_id, n):
    return (await mem.store.get_chat(chat_id)).turn_count >= n


async def test_what_is_typed_during_a_switch_goes_to_the_new_chat(
    pulse, live, gemini, live_certificate, tmp_path, monkeypatch
):
    """A turn typed after the switch was decided, while the model still announces it, belongs to
    the chat the conversation moves to: it is sent to the new session and stored there, never to
    the session about to close."""
    monkeypatch.setenv("SSL_CERT_FILE", str(live_certificate[0]))
    called = asyncio.Event()
    old_session_heard: list[str] = []

    async def script(conn):
        await conn.complete_setup()
        if conn.index == 0:
            await conn.tool_call({"id": "s1", "name": "new_chat", "args": {"topic": "Kyoto"}})
            called.set()
            answer = response_of(await conn.expect("tool_response"))
            await conn.reply(answer["say"], tone(0.3), paced=True)
            with contextlib.suppress(AssertionError, TimeoutError):
                old_session_heard.append(await typed_turn(conn, timeout=2))
        else:
            question = await typed_turn(conn)
            await conn.reply(f"About {question}: three days.", tone(0.1))
        await conn.closed.wait()

    live.script = script
    async with open_memory(settings_for(live, gemini, tmp_path)) as mem:
        first = (await mem.store.create_chat(title="Sourdough")).chat.id
        async with spoken_conversation(mem, first) as conversation:
            await called.wait()
            await eventually(lambda: conversation.switching, what="the switch decided")
            conversation.say("How long in Kyoto?")
            second = await live.wait_connections(2)
            await eventually(lambda: second.sent[-1:] == [{"serverContent": {"turnComplete": True}}], what="the answer")
            new = conversation.memory.chat_id
            await eventually(lambda: _turns(mem, new, 2), what="the exchange stored in the new chat")
        first_history = [t.text for t in (await mem.store.load_history(first)).full_history]
        new_history = [t.text for t in (await mem.store.load_history(new)).full_history]
    assert old_session_heard == []
    assert first_history == ["A new chat is open."]
    assert new_history == ["How long in Kyoto?", "About How long in Kyoto?: three days."]


async def test_what_is_said_during_a_switch_goes_to_the_new_chat(
    pulse, live, gemini, live_certificate, tmp_path, monkeypatch
):
    """Words spoken after the switch was decided (its cue plays), while the model still announces
    it and the new session connects, belong to the chat moved to: the session about to close
    never hears them, the new one hears all of them, and they are stored in the new chat."""
    monkeypatch.setenv("SSL_CERT_FILE", str(live_certificate[0]))
    decided: list[float] = []
    heard_new: list[bytes] = []

    async def script(conn):
        await conn.complete_setup()
        if conn.index == 0:
            await conn.tool_call({"id": "s1", "name": "new_chat", "args": {"topic": "Kyoto"}})
            answer = response_of(await conn.expect("tool_response"))
            decided.append(time.monotonic())
            await conn.reply(answer["say"], tone(2.0), paced=True)  # long enough to talk over
            # The service would take and transcribe what it heard here, in the chat left.
            with contextlib.suppress(TimeoutError):
                await conn.utterance(timeout=2)
                await conn.heard("How long in Kyoto?")
        else:
            heard_new.append(await conn.utterance(timeout=10))
            await conn.heard("How long in Kyoto?")
            await conn.reply("Three days.", tone(0.1))
        await conn.closed.wait()

    live.script = script
    question = speech("How long in Kyoto?")
    # Without the echo canceller, which turns the user down while the announcement plays (double
    # talk), the microphone's audio is the question as played: the test can tell all of it arrived.
    settings = settings_for(live, gemini, tmp_path).model_copy(update={"echo_cancellation": False})
    async with open_memory(settings) as mem:
        first = (await mem.store.create_chat(title="Sourdough")).chat.id
        async with spoken_conversation(mem, first) as conversation:
            await eventually(lambda: conversation.switching, what="the switch decided")
            await pulse.play_into_mic(question)
            await live.wait_connections(2)
            new_chat = conversation.memory.chat_id
            await eventually(lambda: _turns(mem, new_chat, 2), timeout=15, what="the exchange stored in the new chat")
        first_history = [t.text for t in (await mem.store.load_history(first)).full_history]
        new_history = [t.text for t in (await mem.store.load_history(new_chat)).full_history]
    after_decision = b"".join(f.audio for f in live.connections[0].frames if f.received_at > decided[0])
    assert loudest(after_decision) < 300, "the closing session heard words said after the switch"
    # The whole question reached the new session: as loud and about as long as it was said.
    assert len(heard_new) == 1 and loudest(heard_new[0]) > 5000
    assert voiced_ms(heard_new[0]) >= voiced_ms(question) - 100
    assert first_history == ["A new chat is open."]
    assert new_history == ["How long in Kyoto?", "Three days."]


async def test_a_switch_longer_than_the_hold_keeps_the_latest_words_and_says_so(
    pulse, live, gemini, live_certificate, tmp_path, monkeypatch, caplog
):
    """What is said during a switch is held up to `switch_hold_s`: beyond it the oldest audio
    goes, and the log says how much, when the rest reaches the new session."""
    monkeypatch.setenv("SSL_CERT_FILE", str(live_certificate[0]))
    played = asyncio.Event()

    async def script(conn):
        await conn.complete_setup()
        if conn.index == 0:
            await conn.tool_call({"id": "s1", "name": "new_chat", "args": {"topic": "Kyoto"}})
            answer = response_of(await conn.expect("tool_response"))
            await conn.reply(answer["say"], tone(0.3), complete=False)
            await played.wait()  # the announcement's turn ends once the whole question was said
            await conn.turn_complete()
        await conn.closed.wait()

    live.script = script
    question = speech("How long should we stay in Kyoto and in Osaka in the spring?")[:-9600]  # ends with words
    settings = settings_for(live, gemini, tmp_path).model_copy(
        update={"echo_cancellation": False, "switch_hold_s": 1.5}
    )
    async with open_memory(settings) as mem:
        first = (await mem.store.create_chat(title="Sourdough")).chat.id
        async with spoken_conversation(mem, first) as conversation:
            await eventually(lambda: conversation.switching, what="the switch decided")
            await pulse.play_into_mic(question)
            played.set()
            new = await live.wait_connections(2)
            await eventually(lambda: "were dropped" in caplog.text, what="the log line")
            await eventually(lambda: len(new.audio) > 32 * 1500, what="the held audio sent")
    assert "a switch took longer than 1.5 s: the first" in caplog.text
    # Only the last 1.5 s said reached the new session, the end of the question among it.
    assert 0 < voiced_ms(new.audio) <= 1520 < voiced_ms(question)


def loudest(pcm: bytes) -> float:
    """The loudest 20 ms window's RMS."""
    window = 640
    return max((rms(pcm[i : i + window]) for i in range(0, len(pcm) - window + 1, window)), default=0.0)


def voiced_ms(pcm: bytes) -> int:
    window = 640
    return 20 * sum(rms(pcm[i : i + window]) > 300 for i in range(0, len(pcm) - window + 1, window))
