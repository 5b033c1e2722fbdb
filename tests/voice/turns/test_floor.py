"""Parla decides who has the floor (PARLA_TURN_DETECTION=local), through PulseAudio, the real
Silero VAD and the Live emulator driven by the real SDK: the setup disables the service's
detection and Parla marks the user's turn; a person talking over the answer cuts it; a knock or a
backchannel over the answer only pauses it, and it goes on from where it stopped (the end of the
user's turn: test_end_of_turn.py)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

import numpy as np
import pytest

from parla.voice.audio.devices import Microphone, Speaker
from parla.voice.audio.echo import EchoCanceller, PlayedAudio
from parla.voice.live.transcript import spoken_prefix
from tests.conftest import eventually
from tests.peers.live_emulator import LiveConnection, tone
from tests.peers.pulse import speech
from tests.peers.turn_corpus import knock
from tests.voice.audio.test_echo import ANSWER, voice
from tests.voice.live.test_live import conversation, new_chat

pytestmark = pytest.mark.tier("audio")

LONG_ANSWER = " ".join([ANSWER] * 3)
USER = 3300 / np.sqrt(10)  # the user as loud at the microphone as the answer's echo


def local(voice_config, **settings):
    return voice_config.model_copy(update={"turn_detection": "local", **settings})


def spoken(text: str) -> bytes:
    """flite's speech from its first sound to its last (no silence around it)."""
    samples = np.frombuffer(speech(text, pad_ms=0), "<i2")
    sound = np.flatnonzero(np.abs(samples) > 100)
    return samples[sound[0] : sound[-1] + 1].tobytes()


def loud(pcm: bytes, rms: float) -> bytes:
    a = np.frombuffer(pcm, "<i2").astype(float)
    return np.clip(a * rms / np.sqrt(np.mean(a**2)), -32768, 32767).astype("<i2").tobytes()


async def test_the_user_turn_is_marked_by_parla(pulse, live, live_client, voice_config, store):
    chat = await new_chat(store)
    said = speech("what is the weather like in Lisbon")
    heard: list[bytes] = []

    async def script(conn: LiveConnection) -> None:
        await conn.complete_setup()
        heard.append(await conn.utterance())
        await conn.heard(" What is the weather like in Lisbon?")
        await conn.reply("Sunny.", tone(0.2))
        await conn.closed.wait()

    live.script = script
    async with (
        Microphone() as mic,
        Speaker() as speaker,
        conversation(live_client, local(voice_config), store, chat.id, microphone=mic, speaker=speaker),
    ):
        await pulse.play_into_mic(said)
        await eventually(lambda: heard, timeout=10, what="the user's turn")
    conn = live.connections[0]
    assert conn.setup["realtime_input_config"]["automatic_activity_detection"]["disabled"] is True
    assert [kind for kind, _ in conn.activity] == ["start", "end"]
    samples = np.frombuffer(said, "<i2")
    loud = np.flatnonzero(np.abs(samples) > 300)
    first, last = said[loud[0] * 2 : loud[0] * 2 + 3200], said[loud[-1] * 2 - 3200 : loud[-1] * 2]
    # The turn holds the whole sentence: the audio from before the detected onset went with it.
    assert first in heard[0], "the first word's start was not sent"
    assert last in heard[0], "the last word's end was not sent"


class CountingSpeaker(Speaker):
    """A speaker that counts its pauses and the bytes of the answer it was given."""

    pauses = 0
    received = 0

    def pause(self) -> None:
        self.pauses += 1
        super().pause()

    def play(self, pcm: bytes) -> None:
        self.received += len(pcm)
        super().play(pcm)


@contextlib.asynccontextmanager
async def _in_the_room(pulse, live_client, config, store, chat_id: str) -> AsyncIterator[CountingSpeaker]:
    """A conversation with the answer on loudspeakers in the test room (back 10 dB down after
    90 ms) and Parla's echo canceller on the microphone."""
    played = PlayedAudio()
    with pulse.room(delay_ms=90, gain_db=-10):
        async with (
            Microphone(echo=EchoCanceller(played)) as mic,
            CountingSpeaker(reference=played) as speaker,
            conversation(live_client, config, store, chat_id, microphone=mic, speaker=speaker),
        ):
            yield speaker


async def _over_the_answer(
    pulse, live, live_client, voice_config, store, sound: bytes, text: str = LONG_ANSWER, **settings
) -> tuple[list[bool], int, bool]:
    """Play `sound` into the microphone 1.5 s into a long spoken answer on loudspeakers (the room
    brings it back 10 dB down; Parla's echo canceller runs); whether the service finished the
    answer, how many times the speaker paused, and whether every byte of it was played."""
    chat = await new_chat(store)
    speaking = asyncio.Event()
    answered: list[bool] = []
    answer = voice(text, "kal16", 3300)

    async def script(conn: LiveConnection) -> None:
        await conn.complete_setup()
        await asyncio.sleep(1.0)
        speaking.set()
        answered.append(await conn.reply(text, answer, paced=True))
        await conn.closed.wait()

    live.script = script
    async with _in_the_room(pulse, live_client, local(voice_config, **settings), store, chat.id) as speaker:
        await speaking.wait()
        await asyncio.sleep(1.5)
        assert not answered, "the answer ended before the sound"
        await pulse.play_into_mic(sound, latency_ms=20)
        async with asyncio.timeout(30):
            while not answered:
                await asyncio.sleep(0.05)
        if answered == [True]:  # the service sent it all: wait for the speaker to play it all
            with contextlib.suppress(AssertionError):
                await eventually(lambda: speaker.played_bytes >= len(answer), timeout=30, what="the answer")
    return answered, speaker.pauses, speaker.played_bytes >= len(answer)


async def test_a_person_talking_over_the_answer_cuts_it(pulse, live, live_client, voice_config, store):
    user = voice("wait, stop, tell me about the trains instead", "slt", USER, factor=1.0)
    answered, pauses, _ = await _over_the_answer(pulse, live, live_client, voice_config, store, user)
    assert answered == [False], "the user's words did not cut the answer"
    assert pauses >= 1, "the speaker did not pause when the user spoke"
    assert [kind for kind, _ in live.connections[0].activity][:1] == ["start"]


async def test_a_knock_over_the_answer_does_not_cut_it(pulse, live, live_client, voice_config, store):
    sound = loud(bytes(1600) + (knock(np.random.default_rng(1)) * 3000).astype("<i2").tobytes() + bytes(1600), USER)
    # With the default rules: the knock pauses the answer at most; if it lasted long enough to go to
    # the service, the service heard no words in it.
    # An answer of 10 s, not 15: it is played whole, and 7 s after the knock show it went on.
    r = await _words_over_the_answer(
        pulse, live, live_client, voice_config, store, sound, "", text=f"{ANSWER} {ANSWER}"
    )
    assert r.played >= r.received, f"a knock cut the answer: {r.received} received, {r.played} played ({r.activity})"


async def test_a_backchannel_pauses_the_answer_which_then_goes_on_from_where_it_stopped(
    pulse, live, live_client, voice_config, store
):
    # Here the mechanism is tested (the speaker pauses, then plays the rest), so the backchannel is
    # a clear one, 6 dB over the echo (through double talk the canceller may swallow a quieter one
    # whole), and the barge-in window is longer than it (python -m bench.turns measures how often a
    # backchannel cuts the answer with the defaults).
    sound = voice("okay", "slt", USER * 2, factor=1.0)
    answered, pauses, played_all = await _over_the_answer(
        pulse, live, live_client, voice_config, store, sound, ANSWER, floor_barge_in_ms=1000
    )
    assert answered == [True] and live.connections[0].activity == [], "an 'okay' cut the answer"
    assert pauses >= 1, "the speaker did not pause for the 'okay'"
    assert played_all, "the answer did not go on from where it paused: some of it was dropped"


@dataclass
class OverTheAnswer:
    received: int  # bytes of the answer that reached Parla's speaker
    played: int  # ... and that it played
    activity: list[str]  # the activity markers sent
    chat_id: str
    transcript: str  # the service's transcript of the answer, as far as it was generated


async def _words_over_the_answer(
    pulse,
    live,
    live_client,
    voice_config,
    store,
    sound: bytes,
    said: str,
    speed: float = 2.0,
    text: str = LONG_ANSWER,
    **settings,
) -> OverTheAnswer:
    """Play `sound` 3 s into a spoken answer (the canceller and the near-end judgement have
    learnt the room by then) that the service generates `speed` times as fast as it is played, through
    the test room and Parla's canceller; if Parla sends it as the user's, the service transcribes
    it as `said` 300 ms after it starts (nothing for ""). The activity markers sent may have more
    after the first turn's: an echo the canceller lets through while the rest of the answer plays
    may add a turn on a busy machine (docs/design/turn-taking.md, Known weak)."""
    chat = await new_chat(store)
    speaking = asyncio.Event()
    answered: list[bool] = []
    answer = voice(text, "kal16", 3300)

    async def script(conn: LiveConnection) -> None:
        async def transcribe() -> None:
            await eventually(lambda: conn.activity, timeout=60, what="the sound sent as the user's")
            await asyncio.sleep(0.3)
            await conn.heard(said)

        await conn.complete_setup()
        await asyncio.sleep(1.0)
        speaking.set()
        transcribing = asyncio.create_task(transcribe()) if said else None
        answered.append(await conn.reply(text, answer, paced=True, speed=speed))
        if transcribing is not None:
            await transcribing
        await conn.closed.wait()

    live.script = script
    async with _in_the_room(pulse, live_client, local(voice_config, **settings), store, chat.id) as speaker:
        await speaking.wait()
        await asyncio.sleep(3.0)
        await pulse.play_into_mic(sound, latency_ms=20)
        await eventually(lambda: answered, timeout=30, what="the service's answer to end")
        assert await speaker.drained(timeout=30), "the speaker did not go quiet"
        conn = live.connections[0]
        if conn.activity:
            await eventually(lambda: len(conn.activity) >= 2, timeout=20, what="the end of the user's sound")
        received, played = speaker.received, speaker.played_bytes
    transcript = "".join(
        m["serverContent"]["outputTranscription"]["text"]
        for m in conn.sent
        if "outputTranscription" in m.get("serverContent", {})
    )
    return OverTheAnswer(received, played, [kind for kind, _ in conn.activity], chat.id, " ".join(transcript.split()))


# A barge-in window shorter than the sound: it always reaches the service, and its words decide.
SENT = {"floor_barge_in_ms": 96, "floor_words": True}


async def test_a_backchannel_the_service_heard_lets_the_answer_go_on(pulse, live, live_client, voice_config, store):
    sound = voice("mm-hmm", "slt", USER * 2, factor=1.0)
    r = await _words_over_the_answer(pulse, live, live_client, voice_config, store, sound, "Mm-hmm.", **SENT)
    assert r.activity[:2] == ["start", "end"]
    assert live.connections[0].cut_replies == 1, "the service's answer was not stopped by the 'mm-hmm'"
    assert r.played >= r.received, "the answer stopped for an 'mm-hmm': what the service sent was not all played"


def assert_cut(r: OverTheAnswer) -> None:
    """The answer was cut at once: the service sent it faster than it played (twice as fast, or all
    of it at once), so over a second of it is never heard."""
    assert r.received - r.played > 24_000 * 2, (
        f"a 'stop' did not cut the answer: {r.received} received, {r.played} played"
    )


async def _stored_model_turn(store, r: OverTheAnswer) -> str:
    """The model's answer as stored once the conversation closed: marked cut off, and only as much
    of its transcript as was played (its share of the audio, to a word)."""
    model = [t for t in (await store.load_history(r.chat_id)).full_history if t.role == "model"]
    assert model and model[0].interrupted, f"the cut answer was not stored as cut off: {model}"
    heard = spoken_prefix(r.transcript, r.played / r.received)
    # The speaker's count of played bytes runs a device buffer (50 ms) ahead of what was heard.
    assert len(heard) - 25 <= len(model[0].text) <= len(heard) + 25, (
        f"the stored answer is not what was played ({r.played} of {r.received} bytes): {model[0].text!r}"
    )
    return model[0].text


async def test_a_short_stop_cuts_the_answer_and_its_turn_keeps_only_what_was_played(
    pulse, live, live_client, voice_config, store
):
    sound = voice("stop", "slt", USER * 2, factor=1.0)
    # The service's `interrupted` comes at the sound's activityStart, before its words cut the answer.
    r = await _words_over_the_answer(pulse, live, live_client, voice_config, store, sound, "Stop.", **SENT)
    assert r.activity[:2] == ["start", "end"], "the 'stop' was not sent as the user's"
    assert_cut(r)
    await _stored_model_turn(store, r)


async def test_a_stop_after_the_service_sent_the_whole_answer_keeps_only_what_was_played(
    pulse, live, live_client, voice_config, store
):
    # The service ended its turn seconds before the "stop": no `interrupted` comes, its words cut
    # what the speaker holds, and the turn, held while it played, is stored as far as it was heard.
    sound = voice("stop", "slt", USER * 2, factor=1.0)
    r = await _words_over_the_answer(pulse, live, live_client, voice_config, store, sound, "Stop.", speed=100.0, **SENT)
    assert r.activity[:2] == ["start", "end"], "the 'stop' was not sent as the user's"
    assert_cut(r)
    await _stored_model_turn(store, r)


async def test_without_words_a_barge_in_cuts_the_answer_and_its_turn_keeps_only_what_was_played(
    pulse, live, live_client, voice_config, store
):
    # Parla drops what the speaker holds at the barge-in, before the service's `interrupted` comes.
    sound = voice("stop", "slt", USER * 2, factor=1.0)
    r = await _words_over_the_answer(
        pulse, live, live_client, voice_config, store, sound, "", **{**SENT, "floor_words": False}
    )
    assert_cut(r)
    await _stored_model_turn(store, r)


async def test_without_words_a_barge_in_cuts_an_answer_the_service_had_sent_in_full(
    pulse, live, live_client, voice_config, store
):
    # The service has sent the whole answer before the user speaks: no `interrupted` will come, so
    # Parla itself must drop what the speaker holds (it was left paused for good).
    sound = voice("stop", "slt", USER * 2, factor=1.0)
    r = await _words_over_the_answer(
        pulse, live, live_client, voice_config, store, sound, "", speed=100.0, **{**SENT, "floor_words": False}
    )
    assert r.activity[:1] == ["start"], "the 'stop' was not sent as the user's"
    assert_cut(r)
    # The service ended its turn seconds before the cut: the turn is held while the speaker plays it,
    # so the stored answer is what was played, not the whole of it.
    await _stored_model_turn(store, r)


async def test_a_connection_lost_while_the_user_talks_carries_the_turn_on_to_the_next(
    pulse, live, live_client, voice_config, store
):
    chat = await new_chat(store)
    said = speech("I would like to book a table for four people tomorrow evening at the place near the river")
    heard: list[bytes] = []

    async def script(conn: LiveConnection) -> None:
        await conn.complete_setup()
        if conn.index == 0:
            await eventually(lambda: conn.activity, timeout=10, what="the user's turn to start")
            await asyncio.sleep(0.5)
            await conn.drop()
            return
        heard.append(await conn.utterance(timeout=20))
        await conn.reply("Booked.", tone(0.2))
        await conn.closed.wait()

    live.script = script
    async with (
        Microphone() as mic,
        Speaker() as speaker,
        conversation(live_client, local(voice_config), store, chat.id, microphone=mic, speaker=speaker),
    ):
        await pulse.play_into_mic(said)
        await eventually(lambda: heard, timeout=15, what="the turn on the second connection")
    second = live.connections[1]
    # The new connection is told the user is talking before any of the rest of the turn arrives.
    assert [kind for kind, _ in second.activity] == ["start", "end"]
    assert second.of_kind("realtime_input")[0].body == {"activity_start": {}}
    assert len(heard[0]) > 16_000 * 2 * 1.0, "the rest of the sentence did not reach the new connection"
