"""The cue of a switch, through PulseAudio: decided while a reply plays, it is heard within 200 ms
(mixed into what plays next, not queued behind the reply), and the reply still plays out."""

from __future__ import annotations

import asyncio
import time

import pytest

from parla.daemon.chat_memory import ChatMemory
from parla.memory.config import MemoryConfig
from parla.memory.store.refused import RefusedTurns
from parla.voice.audio.cues import SWITCH_CUE_HZ, switch_cue
from parla.voice.audio.devices import Speaker
from parla.voice.live.conversation import LiveConversation
from tests.conftest import eventually
from tests.peers.live_emulator import tone

pytestmark = pytest.mark.tier("audio")

REPLY_HZ = 440.0


async def test_the_switch_cue_is_heard_within_200_ms_over_a_playing_reply(
    pulse, live, live_client, voice_config, store
):
    chat = (await store.create_chat(title="sourdough")).chat
    other = (await store.create_chat(title="Japan")).chat

    async def script(conn):
        await conn.complete_setup()
        if conn.index == 0:
            await conn.expect("client_content")
            await conn.reply("Here is a long answer.", tone(2.0, REPLY_HZ))  # all of it buffered at once
        await conn.closed.wait()

    def memory(chat_id: str) -> ChatMemory:
        return ChatMemory(store, MemoryConfig(), chat_id, RefusedTurns(RefusedTurns.beside(store.path)))

    live.script = script
    recorder = pulse.record_speaker()
    async with (
        Speaker(block_ms=20) as speaker,
        LiveConversation(live_client, voice_config, memory(chat.id), speaker=speaker, switch_cue=switch_cue()) as conv,
    ):
        conv.say("tell me everything")
        await eventually(lambda: speaker.ahead_s() > 1.0, what="the reply in the speaker")
        await asyncio.sleep(0.3)
        decided = time.monotonic()
        conv.switch_to(memory(other.id))
        await live.wait_connections(2)
        assert await speaker.drained(5)
        await asyncio.sleep(0.2)
    recorder.stop()
    heard = recorder.first_tone(SWITCH_CUE_HZ, decided)
    assert heard is not None and heard - decided < 0.2, f"the cue came {heard and heard - decided} s after the decision"
    under = recorder.first_tone(REPLY_HZ, heard)
    assert under is not None and under - heard < 0.2  # the reply goes on under it
