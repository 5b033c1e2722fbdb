"""The Live conversation with real audio: flite speech played into the virtual microphone reaches
the emulator bit-exact and in order; the emulator's audio comes out of the speaker monitor; a
barge-in silences the speaker at once and stores only what was played."""

from __future__ import annotations

import asyncio
import time

import pytest

from parla.daemon.chat_memory import ChatMemory
from parla.memory.config import MemoryConfig
from parla.memory.store.refused import RefusedTurns
from parla.voice.audio.devices import Microphone, Speaker
from parla.voice.live.conversation import LiveConversation
from tests.conftest import eventually
from tests.peers.live_emulator import tone
from tests.peers.pulse import speech

pytestmark = pytest.mark.tier("audio")

QUESTION = "what is the weather like in Lisbon"
ANSWER = "It is sunny and twenty two degrees in Lisbon today"


async def test_spoken_exchange_audio_in_and_out(pulse, live, live_client, voice_config, store):
    chat = (await store.create_chat(title="weather")).chat
    said = speech(QUESTION)
    answer_audio = tone(0.6, 587.0)
    heard: list[bytes] = []

    async def script(conn):
        await conn.complete_setup()
        heard.append(await conn.utterance())
        await conn.heard(" What is the weather")
        await conn.heard(" like in Lisbon?")
        await conn.reply(ANSWER, answer_audio)
        await conn.closed.wait()

    live.script = script
    recorder = pulse.record_speaker()
    async with (
        Microphone(block_ms=20) as mic,
        Speaker(block_ms=20) as speaker,
        LiveConversation(
            live_client,
            voice_config,
            ChatMemory(store, MemoryConfig(), chat.id, RefusedTurns(RefusedTurns.beside(store.path))),
            microphone=mic,
            speaker=speaker,
        ),
    ):
        await pulse.play_into_mic(said)
        await eventually(lambda: store.get_chat(chat.id), what="the chat")
        await eventually(lambda: _count(store, chat.id, 2), timeout=10, what="the exchange to be stored")
        assert await speaker.drained(3)
        await asyncio.sleep(0.2)
    recorder.stop()
    conn = live.connections[0]
    speech_core = said[9600:-9600]  # flite's speech without the 300 ms pads
    assert speech_core in conn.audio, "the emulator did not receive the spoken PCM in order"
    assert heard[0] in said, "the utterance the emulator heard is not the speech played"
    assert answer_audio in recorder.audio, "the emulator's audio did not come out of the speaker"
    history = (await store.load_history(chat.id)).full_history
    assert [(t.role, t.text) for t in history] == [("user", "What is the weather like in Lisbon?"), ("model", ANSWER)]


async def _count(store, chat_id, n):
    return (await store.get_chat(chat_id)).turn_count >= n


async def test_barge_in_silences_the_speaker_and_keeps_what_was_played(pulse, live, live_client, voice_config, store):
    chat = (await store.create_chat(title="story")).chat
    story = " ".join(f"word{i}" for i in range(60))
    interrupted_at: list[float] = []

    async def script(conn):
        await conn.complete_setup()
        await conn.expect("client_content")
        await conn.reply(story, tone(3.0, 440.0), complete=False)
        await asyncio.sleep(1.0)  # about a third of the reply has been played
        interrupted_at.append(time.monotonic())
        await conn.interrupted()
        await conn.heard(" stop please")
        await conn.reply("Sure, stopping.", tone(0.2, 660.0))
        await conn.closed.wait()

    live.script = script
    recorder = pulse.record_speaker()
    async with (
        Speaker(block_ms=20) as speaker,
        LiveConversation(
            live_client,
            voice_config,
            ChatMemory(store, MemoryConfig(), chat.id, RefusedTurns(RefusedTurns.beside(store.path))),
            speaker=speaker,
        ) as conv,
    ):
        await asyncio.sleep(0.3)  # the recorder is running
        conv.say("Tell me a long story")
        await eventually(lambda: _count(store, chat.id, 4), timeout=10, what="both exchanges")
        silence_from = time.monotonic()
        await asyncio.sleep(0.4)
    recorder.stop()
    # The barge-in: from the emulator sending `interrupted` to the last sound on the monitor,
    # leaving out the short answer that followed it.
    last_story_sound = max(
        (t for t, piece in recorder.chunks if t < silence_from and _is_tone(piece, 440.0)), default=None
    )
    assert last_story_sound is not None
    # How soon the speaker fell silent is a figure for bench.voice (a wall-clock bound fails on a busy
    # machine); what is asserted is counted in audio: the story stopped long before its end, and the
    # stored turn keeps as much of the text as the speaker played of the audio.
    stop_ms = (last_story_sound - interrupted_at[0]) * 1000
    print(f"barge-in: monitor silent {stop_ms:.1f} ms after `interrupted` was sent")
    heard = sum(len(piece) for t, piece in recorder.chunks if t < silence_from and _is_tone(piece, 440.0)) / 48_000
    history = (await store.load_history(chat.id)).full_history
    model = history[1]
    assert model.interrupted and story.startswith(model.text)
    kept = len(model.text.split()) / 60
    assert 0.1 < heard / 3.0 < 0.7, f"{heard:.2f} s of the 3 s story came out of the speaker"
    # one word of the 60 is 50 ms of the story; the device buffer and the text's rounding add a few
    assert abs(kept - heard / 3.0) < 0.1, f"kept {kept:.0%} of the text for {heard / 3.0:.0%} of the audio played"
    assert [(t.role, t.text) for t in history[2:]] == [("user", "stop please"), ("model", "Sure, stopping.")]


def _is_tone(piece: bytes, frequency: float) -> bool:
    import numpy as np

    samples = np.frombuffer(piece, "<i2").astype(np.float64)
    if samples.size < 16 or np.abs(samples).max() < 1000:
        return False
    spectrum = np.abs(np.fft.rfft(samples, n=2400))
    peak = np.argmax(spectrum) * 24000 / 2400
    return abs(peak - frequency) < 60
