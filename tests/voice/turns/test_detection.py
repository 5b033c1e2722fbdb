"""The two turn detections behind the one interface the conversation feeds (voice.turns.detection),
through the real SDK and the Live emulator, with flite speech given as the microphone's blocks (no
sound server) and, for the local floor, the real Silero model: with the service's detection the
microphone's audio goes as it is, with no activity marker; with the local floor only the user's
turn goes, between activityStart and activityEnd, and a turn still open when the connection drops
opens again first on the next connection."""

from __future__ import annotations

import asyncio

import pytest

from tests.conftest import eventually
from tests.peers.live_emulator import LiveConnection
from tests.peers.pulse import speech
from tests.voice.live.test_live import conversation, new_chat

pytestmark = pytest.mark.tier("fast")

BLOCK = 640  # 20 ms of 16 kHz int16, as the microphone reads it


class Said:
    """The microphone: what the test says, read in blocks as the device gives them."""

    def __init__(self) -> None:
        self.blocks: asyncio.Queue[bytes] = asyncio.Queue()

    def say(self, pcm: bytes) -> None:
        for i in range(0, len(pcm), BLOCK):
            self.blocks.put_nowait(pcm[i : i + BLOCK])

    async def read(self) -> bytes:
        return await self.blocks.get()


async def test_with_the_services_detection_the_audio_goes_as_it_is(live, live_client, voice_config, store):
    chat = await new_chat(store)
    said = speech("what is the weather like in Lisbon")

    async def script(conn: LiveConnection) -> None:
        await conn.complete_setup()
        await conn.closed.wait()

    live.script = script
    microphone = Said()
    async with conversation(live_client, voice_config, store, chat.id, microphone=microphone):
        microphone.say(said)
        conn = await live.wait_connections(1)
        await eventually(lambda: len(conn.audio) >= len(said), what="the microphone's audio sent")
    assert not conn.setup["realtime_input_config"]["automatic_activity_detection"].get("disabled")
    assert conn.activity == [] and conn.audio == said


async def test_with_the_local_floor_a_turn_open_at_a_drop_opens_again_first(live, live_client, voice_config, store):
    chat = await new_chat(store)
    said = speech("what is the weather like in Lisbon", pad_ms=0)
    cut = len(said) // 2 // BLOCK * BLOCK  # mid-sentence: the user still has the floor
    before, after = bytes(16 * 2 * 300) + said[:cut], said[cut:]
    heard: list[bytes] = []

    async def script(conn: LiveConnection) -> None:
        await conn.complete_setup()
        if conn.index == 0:
            await eventually(lambda: conn.activity, timeout=10, what="the user's turn started")
            await conn.drop()
        else:
            heard.append(await conn.utterance())
        await conn.closed.wait()

    live.script = script
    microphone = Said()
    local = voice_config.model_copy(update={"turn_detection": "local"})
    async with conversation(live_client, local, store, chat.id, microphone=microphone):
        microphone.say(before)
        second = await live.wait_connections(2)
        microphone.say(after + bytes(16 * 2 * 2000))  # then quiet past the floor's silence window
        await eventually(lambda: heard, timeout=10, what="the user's turn on the new connection")
    first = live.connections[0]
    assert first.setup["realtime_input_config"]["automatic_activity_detection"]["disabled"] is True
    assert [kind for kind, _ in first.activity] == ["start"]
    assert "activity_start" in second.frames[0].body, "the open turn did not open again before its audio"
    assert [kind for kind, _ in second.activity] == ["start", "end"]
    assert after in heard[0], "the rest of the sentence was not the new connection's turn"
