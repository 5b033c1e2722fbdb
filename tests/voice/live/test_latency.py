"""Voice-to-voice time measured in the product: flite speech into the virtual microphone, the
emulator answering after a fixed delay, the answer out of the virtual speaker; and the log line
when the service's part keeps growing within a session."""

from __future__ import annotations

import asyncio
import logging

import pytest

from parla.daemon.chat_memory import ChatMemory
from parla.memory.config import MemoryConfig
from parla.memory.store.refused import RefusedTurns
from parla.voice.audio.devices import Microphone, Speaker
from parla.voice.live.conversation import LiveConversation
from parla.voice.live.latency import VoiceToVoice, summary
from tests.conftest import eventually
from tests.peers.live_emulator import tone
from tests.peers.pulse import speech

pytestmark = pytest.mark.tier("fast")

SERVICE_DELAY_S = 0.4


@pytest.mark.tier("audio")
async def test_each_spoken_turn_is_timed_and_split(pulse, live, live_client, voice_config, store):
    chat = (await store.create_chat(title="timing")).chat
    heard_at: list[float] = []

    async def script(conn):
        await conn.complete_setup()
        for _ in range(2):
            await conn.utterance()
            heard_at.append(asyncio.get_running_loop().time())
            await asyncio.sleep(SERVICE_DELAY_S)
            await conn.reply("Sunny.", tone(0.3, 587.0))
        await conn.closed.wait()

    live.script = script
    async with (
        Microphone(block_ms=20) as mic,
        Speaker(block_ms=20) as speaker,
        LiveConversation(
            live_client,
            voice_config,
            ChatMemory(store, MemoryConfig(), chat.id, RefusedTurns(RefusedTurns.beside(store.path))),
            microphone=mic,
            speaker=speaker,
        ) as conv,
    ):
        await pulse.play_into_mic(speech("what is the weather like"))
        await eventually(lambda: len(conv.latency.turns) == 1, timeout=10, what="the first timed turn")
        await pulse.play_into_mic(speech("and tomorrow"))
        await eventually(lambda: len(conv.latency.turns) == 2, timeout=10, what="the second timed turn")
    for turn in conv.latency.turns:
        # The service's part holds the emulator's wait for the end of speech and its fixed delay;
        # Parla's holds at least the speaker's device buffer.
        assert turn.service_ms >= SERVICE_DELAY_S * 1000
        assert 0 < turn.parla_ms < turn.total_ms
    figures = summary(conv.latency.turns)
    assert figures["turns"] == 2 and figures["total_p50_ms"] is not None


def test_a_growing_service_part_is_logged_once_per_step(caplog):
    timing = VoiceToVoice(speech_rms=100, window=3, growth_ratio=1.5)
    loud = (tone(0.02, rate=16_000)[:640]) * 1
    clock = 0.0

    def turn(service_s: float) -> None:
        nonlocal clock
        timing.sent(loud, clock, clock + 0.001)
        timing.answer_audio(clock + 0.001 + service_s, 0.05)
        clock += 10

    with caplog.at_level(logging.WARNING, logger="parla.voice.live.latency"):
        for service_s in (0.5, 0.5, 0.5, 0.5, 0.6, 0.5):
            turn(service_s)
        assert not caplog.records  # steady
        for service_s in (0.9, 0.9, 0.9, 0.9):
            turn(service_s)
        assert len(caplog.records) == 1 and "500 ms" in caplog.text and "900 ms" in caplog.text
        turn(1.0)
        assert len(caplog.records) == 1  # not grown by another step
    assert [round(t.service_ms) for t in timing.turns][:2] == [500, 500]
    assert round(timing.turns[0].parla_ms) == 51
