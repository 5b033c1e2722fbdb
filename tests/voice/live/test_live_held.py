"""An ended answer held back from the store while the speaker plays it (local detection, through
PulseAudio and the Live emulator driven by the real SDK), kept on disk meanwhile: the next exchange
still stores in the order said and at once; a connection's end and a switch to another chat store
it (whole: it was not cut); the held file is empty after each."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from parla.daemon.chat_memory import ChatMemory
from parla.memory.config import MemoryConfig
from parla.memory.store.refused import RefusedTurns
from parla.voice.audio.devices import Microphone, Speaker
from parla.voice.live.conversation import LiveConversation
from tests.conftest import eventually
from tests.peers.live_emulator import LiveConnection, tone
from tests.voice.live.test_live import conversation, has_turns, new_chat, stored
from tests.voice.turns.test_floor import local

pytestmark = pytest.mark.tier("audio")

ANSWER = "The heron counted the boats on the river every morning and the boats counted it back"
NEXT = "They still do."
ANSWER_S = 10.0  # sent at once, played in real time: held for seconds


def held_file(store) -> Path:
    return RefusedTurns.held_beside(RefusedTurns.beside(store.path))


@contextlib.asynccontextmanager
async def _talking(live_client, voice_config, store, chat_id: str) -> AsyncIterator[tuple[LiveConversation, Speaker]]:
    async with (
        Microphone() as mic,
        Speaker() as speaker,
        conversation(live_client, local(voice_config), store, chat_id, microphone=mic, speaker=speaker) as conv,
    ):
        yield conv, speaker


async def _asked(conn: LiveConnection) -> None:
    while (frame := await conn.expect("client_content", timeout=10)).seed or not frame.body["turn_complete"]:
        pass


async def _held(store, speaker: Speaker) -> None:
    """The answer, sent in full, is held past the transcript hold while it plays: on disk, not stored."""
    await eventually(
        lambda: held_file(store).exists() and ANSWER in held_file(store).read_text(), timeout=15, what="the held file"
    )
    assert speaker.queued(), "the answer had played already"


async def test_the_next_exchange_stores_the_held_one_first_and_at_once(live, live_client, voice_config, store, pulse):
    chat = await new_chat(store)

    async def script(conn: LiveConnection) -> None:
        await conn.complete_setup()
        await _asked(conn)
        await conn.reply(ANSWER, tone(ANSWER_S))
        await _asked(conn)
        await conn.reply(NEXT, tone(0.3))
        await conn.closed.wait()

    live.script = script
    async with _talking(live_client, voice_config, store, chat.id) as (conv, speaker):
        conv.say("tell me about the heron")
        await _held(store, speaker)
        assert await stored(store, chat.id) == []
        conv.say("and now?")
        # The next answer's start ends the hold: the first exchange is stored while it still plays.
        await eventually(lambda: has_turns(store, chat.id, 2), what="the held exchange")
        assert speaker.queued(), "the held exchange waited for the speaker"
        await eventually(lambda: has_turns(store, chat.id, 4), timeout=30, what="the next exchange")
        await eventually(lambda: not held_file(store).exists(), what="the held copies forgotten")
    assert await stored(store, chat.id) == [
        ("user", "tell me about the heron"),
        ("model", ANSWER),
        ("user", "and now?"),
        ("model", NEXT),
    ]


async def test_a_connection_ended_while_the_answer_plays_stores_it_whole(live, live_client, voice_config, store, pulse):
    chat = await new_chat(store)
    held = asyncio.Event()

    async def script(conn: LiveConnection) -> None:
        await conn.complete_setup()
        if conn.index == 0:
            await _asked(conn)
            await conn.reply(ANSWER, tone(ANSWER_S))
            await held.wait()
            await conn.drop()
            return
        await conn.closed.wait()

    live.script = script
    async with _talking(live_client, voice_config, store, chat.id) as (conv, speaker):
        conv.say("tell me about the heron")
        await _held(store, speaker)
        held.set()
        await eventually(lambda: has_turns(store, chat.id, 2), what="the exchange stored at the drop")
        assert speaker.queued(), "the answer had played already"
        await eventually(lambda: not held_file(store).exists(), what="the held copy forgotten")
    history = (await store.load_history(chat.id)).full_history
    assert [(t.role, t.text, t.interrupted) for t in history] == [
        ("user", "tell me about the heron", False),
        ("model", ANSWER, False),
    ]


async def test_a_switch_while_the_answer_plays_stores_it_in_the_chat_left(
    live, live_client, voice_config, store, pulse
):
    japan, kitchen = await new_chat(store), await new_chat(store)

    async def script(conn: LiveConnection) -> None:
        await conn.complete_setup()
        if conn.index == 0:
            await _asked(conn)
            await conn.reply(ANSWER, tone(ANSWER_S))
        await conn.closed.wait()

    live.script = script
    async with _talking(live_client, voice_config, store, japan.id) as (conv, speaker):
        conv.say("tell me about the heron")
        await _held(store, speaker)
        conv.switch_to(ChatMemory(store, MemoryConfig(), kitchen.id, RefusedTurns(RefusedTurns.beside(store.path))))
        await live.wait_connections(2)
        assert speaker.queued(), "the answer had played already"
        assert await stored(store, japan.id) == [("user", "tell me about the heron"), ("model", ANSWER)]
        await eventually(lambda: not held_file(store).exists(), what="the held copy forgotten")
    assert await stored(store, kitchen.id) == []
