"""Echo cancellation: the reference is what the speaker rendered, placed by when it was heard;
in the test room (the speaker's sound back in the microphone 90 ms later, 10 dB quieter) the
echo is removed by a clear margin, the model's answer is not cut off by its own voice (it is
without cancellation: the emulator's voice detector takes the echo for the user), and the user
talking over the answer still interrupts it."""

from __future__ import annotations

import asyncio
import subprocess

import numpy as np
import pytest

from parla.daemon.chat_memory import ChatMemory
from parla.memory.config import MemoryConfig
from parla.memory.store.refused import RefusedTurns
from parla.voice.audio.devices import Microphone, Speaker
from parla.voice.audio.echo import EchoCanceller, PlayedAudio
from parla.voice.live.conversation import LiveConversation
from tests.peers.live_emulator import VoiceDetector
from tests.peers.pulse import speech

pytestmark = pytest.mark.tier("audio")

ANSWER = "Sure. Kyoto in April is lovely: the cherry blossoms are out and the temples are busy."
RATE = 24_000


def rms(pcm: bytes | np.ndarray) -> float:
    a = np.frombuffer(pcm, "<i2") if isinstance(pcm, bytes) else pcm
    return float(np.sqrt(np.mean(a.astype(float) ** 2))) if len(a) else 0.0


def voice(text: str, who: str, level: float, factor: float = 1.5) -> bytes:
    """flite speech resampled by `factor` (16 -> 24 kHz for the model) at RMS `level`."""
    a = np.frombuffer(speech(text, who, pad_ms=50), "<i2").astype(float)
    out = np.interp(np.arange(int(len(a) * factor)) / factor, np.arange(len(a)), a)
    return (out * level / rms(out.astype("<i2"))).astype("<i2").tobytes()


def pcm(*values: int) -> bytes:
    return np.array(values, dtype="<i2").tobytes()


def conversation(client, config, store, chat_id: str, mic: Microphone, speaker: Speaker) -> LiveConversation:
    memory = ChatMemory(store, MemoryConfig(), chat_id, RefusedTurns(RefusedTurns.beside(store.path)))
    return LiveConversation(client, config, memory, microphone=mic, speaker=speaker)


@pytest.mark.tier("fast")
def test_the_reference_is_what_was_heard_when():
    played = PlayedAudio(rate=1000, keep_s=1.0)
    played.played(pcm(1, 2, 3, 4), 10.0)
    played.played(pcm(5, 6, 7, 8), 10.004 + 0.001)  # callback times jitter: still one stream
    assert played.window(10.002, 4).tolist() == [3, 4, 5, 6]
    played.played(pcm(9, 9), 10.1)  # restarted later: silence in between
    assert played.window(10.006, 4).tolist() == [7, 8, 0, 0]
    assert played.window(10.099, 3).tolist() == [0, 9, 9]
    played.discard_after(10.101)  # a flush: the second 9 was never heard
    assert played.window(10.1, 3).tolist() == [9, 0, 0]
    assert played.sounding(10.5) and not played.sounding(12.0)


@pytest.mark.tier("fast")
def test_silence_passes_untouched_without_the_engine():
    class Refuses:
        def process(self, near: bytes, far: bytes) -> bytes:
            raise AssertionError("nothing was played: there is no echo to cancel")

    block = pcm(*range(320))
    assert EchoCanceller(PlayedAudio(), Refuses()).process(block, 5.0) == block


class FarFrames:
    """Keeps the first sample of every far-end frame the canceller was given."""

    def __init__(self) -> None:
        self.firsts: list[int] = []

    def process(self, near: bytes, far: bytes) -> bytes:
        self.firsts.append(int(np.frombuffer(far, "<i2")[0]))
        return near


@pytest.mark.tier("fast")
def test_the_reference_does_not_jump_when_the_reported_capture_time_creeps():
    """Seen on PulseAudio with a second recorder on the microphone: while the blocks arrive every
    20 ms, the ADC time PortAudio reports for them advances 19.75 ms a block. Followed whenever
    it strayed 40 ms from the sample clock, the reference jumped 40 ms every 3 s and AEC3 let
    the echo through while it searched again (9 dB removed instead of 50). A sample lost between
    two blocks still moves it."""
    played = PlayedAudio(rate=24_000, keep_s=30.0)
    played.played(np.arange(24_000 * 20, dtype=np.int64).astype("<i2").tobytes(), 100.0)  # a ramp: sample i is i
    engine = FarFrames()
    canceller = EchoCanceller(played, engine)
    block = bytes(320 * 2)  # 20 ms at 16 kHz
    for n in range(600):  # 12 s
        canceller.process(block, 100.0 + n * 0.01975)
    steps = np.diff(np.array(engine.firsts, dtype=np.int64)) % 65_536
    assert set(steps.tolist()) == {240}, "the reference moved other than by the sample clock"
    engine.firsts.clear()
    canceller.process(block, 100.0 + 600 * 0.02 + 0.1)  # 100 ms of samples lost: a step, not a creep
    assert (engine.firsts[0] - (600 * 0.02 + 0.1) * 24_000) % 65_536 == 0


async def test_the_echo_is_removed_by_a_clear_margin(pulse):
    model = voice(ANSWER, "kal16", 3300)
    played = PlayedAudio()
    with pulse.room(delay_ms=90, gain_db=-10):
        async with Microphone(echo=EchoCanceller(played)) as mic, Speaker(reference=played) as speaker:
            await asyncio.sleep(0.2)
            raw = subprocess.Popen(  # noqa: ASYNC220 - the raw microphone, recorded beside Parla's stream
                ["pacat", "--record", "-d", "mic", "--format=s16le", "--rate=16000", "--channels=1", "--raw"],
                stdout=subprocess.PIPE,
                env=pulse.env,
            )
            speaker.play(model)
            heard = bytearray()
            for _ in range(len(model) // 960 + 10):
                heard += await mic.read()
            raw.terminate()
            before = raw.communicate()[0]
    echo, left = rms(before[32000:]), rms(bytes(heard[32000:]))  # after the first second
    assert echo > 500, "the room did not bring the speaker back into the microphone"
    assert left < echo / 4, f"echo {echo:.0f} RMS, after cancellation {left:.0f}: less than 12 dB removed"


@pytest.mark.parametrize("cancel", [True, False], ids=["with-aec", "without-aec"])
async def test_an_answer_on_loudspeakers_is_not_cut_off_by_its_own_echo(
    pulse, live, live_client, voice_config, store, cancel
):
    chat = (await store.create_chat(title="kyoto")).chat
    answered: list[bool] = []

    async def script(conn):
        await conn.complete_setup()
        await asyncio.sleep(1.0)  # an answer follows a question: the streams have been running a while
        answered.append(await conn.reply(ANSWER, voice(ANSWER, "kal16", 3300), paced=True))
        await conn.closed.wait()

    live.script = script
    live.voice_detector = VoiceDetector()
    played = PlayedAudio() if cancel else None
    with pulse.room(delay_ms=90, gain_db=-10):
        async with (
            Microphone(echo=EchoCanceller(played) if played else None) as mic,
            Speaker(reference=played) as speaker,
            conversation(live_client, voice_config, store, chat.id, mic, speaker),
        ):
            async with asyncio.timeout(20):
                while not answered:
                    await asyncio.sleep(0.05)
    # Without cancellation the room's echo is what cut the answer: the emulator's detector works.
    assert answered == [cancel]


async def test_the_user_talking_over_the_answer_still_interrupts_it(pulse, live, live_client, voice_config, store):
    chat = (await store.create_chat(title="kyoto")).chat
    long_answer = " ".join([ANSWER] * 3)
    speaking = asyncio.Event()
    answered: list[bool] = []

    async def script(conn):
        await conn.complete_setup()
        await asyncio.sleep(1.0)
        speaking.set()
        answered.append(await conn.reply(long_answer, voice(long_answer, "kal16", 3300), paced=True))
        await conn.closed.wait()

    live.script = script
    live.voice_detector = VoiceDetector()
    played = PlayedAudio()
    # The user is as loud as the echo of the answer: double talk the canceller must let through.
    user = voice("wait, stop, tell me about the trains instead", "slt", 3300 / np.sqrt(10), factor=1.0)
    with pulse.room(delay_ms=90, gain_db=-10):
        async with (
            Microphone(echo=EchoCanceller(played)) as mic,
            Speaker(reference=played) as speaker,
            conversation(live_client, voice_config, store, chat.id, mic, speaker),
        ):
            await speaking.wait()
            await asyncio.sleep(1.5)
            assert not answered, "the answer ended before the user spoke"
            await pulse.play_into_mic(user, latency_ms=20)
            async with asyncio.timeout(20):
                while not answered:
                    await asyncio.sleep(0.05)
    assert answered == [False], "the user's words did not interrupt the answer"
