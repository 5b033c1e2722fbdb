"""A spoken conversation wired from settings as the daemon wires it (store, compaction worker,
microphone, speaker, Live session through the real SDK), against the Live emulator and the
virtual audio devices: three spoken exchanges end up as six turns of the chat."""

from __future__ import annotations

import asyncio

import pytest

from parla.daemon.conversation import spoken_conversation
from parla.daemon.memory_services import open_memory
from parla.daemon.settings import Settings
from tests.conftest import eventually
from tests.peers.live_emulator import tone
from tests.peers.pulse import speech

pytestmark = pytest.mark.tier("audio")

EXCHANGES = [
    ("I want to plan a trip to Japan in April", "April is cherry blossom season, a lovely time to go."),
    ("How many days should I spend in Kyoto", "Three days in Kyoto is enough for the main temples."),
    ("Book a reminder to buy a rail pass", "I will remind you to buy a Japan Rail Pass."),
]


async def test_three_spoken_exchanges_become_six_turns(pulse, live, gemini, live_certificate, tmp_path, monkeypatch):
    monkeypatch.setenv("SSL_CERT_FILE", str(live_certificate[0]))  # how a daemon trusts a private CA too
    settings = Settings(
        store_path=tmp_path / "parla.db",
        gemini_api_key=live.api_key,
        gemini_base_url=gemini.base_url,
        live_url=live.url,
        summarizer="offline",
        # The questions are checked bit-exact below; echo cancellation reshapes what the
        # microphone hears for a second after the speaker played (tests/voice/audio/test_echo.py).
        echo_cancellation=False,
    )
    utterances: list[bytes] = []

    async def script(conn):
        await conn.complete_setup()
        for question, answer in EXCHANGES:
            utterances.append(await conn.utterance())
            await conn.heard(" " + question + "?")
            await conn.reply(answer, tone(0.3, 500.0 + 50 * len(utterances)))
        await conn.closed.wait()

    live.script = script
    spoken = [speech(question) for question, _ in EXCHANGES]
    async with open_memory(settings) as mem:
        chat_id = (await mem.store.create_chat(title="Japan")).chat.id
        async with spoken_conversation(mem, chat_id) as conversation:
            for n, audio in enumerate(spoken, start=1):
                await pulse.play_into_mic(audio)
                await eventually(
                    lambda n=n: _turns(mem.store, chat_id, 2 * n), timeout=10, what=f"exchange {n} to be stored"
                )
                await asyncio.sleep(0.4)  # the answer plays before the next question
        history = (await mem.store.load_history(chat_id)).full_history
    assert [(t.role, t.text) for t in history] == [
        turn for question, answer in EXCHANGES for turn in (("user", question + "?"), ("model", answer))
    ]
    assert [t.seq for t in history] == [1, 2, 3, 4, 5, 6]
    received = live.connections[0].audio
    positions = [_first_piece_at(received, audio[9600:-9600]) for audio in spoken]
    assert -1 not in positions and positions == sorted(positions), "the spoken questions did not arrive in order"
    assert all(_first_piece_at(u, a[9600:-9600]) >= 0 for u, a in zip(utterances, spoken, strict=True))
    assert conversation.status.connections == 1 and conversation.status.unsaved_turns == 0


async def _turns(store, chat_id, n):
    return (await store.get_chat(chat_id)).turn_count >= n


def _first_piece_at(received: bytes, speech_core: bytes, piece: int = 3200) -> int:
    """Where the first 100 ms piece of `speech_core` that arrived bit-exact sits in `received`.

    Pieces, not the whole utterance: on a starved machine the sound server may drop a block of the
    microphone's stream (an ALSA underrun), which is the machine's doing, not Parla's; what Parla
    must do is pass on what it captured unchanged and in order."""
    for start in range(0, len(speech_core) - piece + 1, piece):
        found = received.find(speech_core[start : start + piece])
        while found >= 0 and found % 2:
            found = received.find(speech_core[start : start + piece], found + 1)
        if found >= 0:
            return found
    return -1
