"""Echo benchmark: `python -m bench.echo [--quick]`. Prints its figures; asserts nothing.

Runs on a headless PulseAudio with a room (tests/peers/pulse.py): what the speaker plays comes
back into the microphone after a delay and quieter. The model's voice is flite speech at about
-20 dBFS; the real Microphone and Speaker classes carry it, with the canceller in the capture
callback as Parla runs it.

- ERLE (echo return loss enhancement): energy of the microphone signal entering the canceller
  over the energy leaving it while the model speaks alone, after the first half second (the
  canceller converging), whole and as the median of 0.5 s pieces, at 3 delays x 2 levels, for
  pywebrtc-audio's EchoCanceller (Parla's) and livekit's AudioProcessingModule (same alignment
  code, same audio); CPU of the cancelling per 20 ms block.
- Self-interruptions: spoken answers of the Live emulator, whose server-side voice detector cuts
  the model off when audio reaches it while the model speaks; with echo cancellation and
  without (the baseline, same run).
- Barge-ins: the user talks over an answer, as loud as the echo; how many interrupt the model
  and how soon (from the user's voice handed to the sound server, 20 ms of buffer, to the
  emulator's voice detector cutting the answer; the detector itself needs 60 ms of speech).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bench.report import Report, Table, parse
from tests.peers.pulse import PulseServer, pacat_command, speech

MODEL_SAYS = (
    "Sure. Kyoto in April is lovely: the cherry blossoms are out, the temples are busy, and you "
    "should book the ryokan early because it fills up weeks ahead."
)
SHORT_ANSWER = "It is sunny and twenty two degrees in Lisbon today, with a light wind from the sea."
USER_SAYS = "wait, stop, tell me about the trains instead"
MODEL_RMS = 3300.0  # about -20 dBFS
DELAYS_MS = (30, 90, 150)
GAINS_DB = (-10.0, -20.0)


def _rms(pcm: np.ndarray) -> float:
    return float(np.sqrt(np.mean(pcm.astype(float) ** 2)))


def _at_rate(pcm: bytes, factor: float, rms: float) -> bytes:
    """flite's 16 kHz speech resampled by `factor` and scaled to `rms`."""
    a = np.frombuffer(pcm, "<i2").astype(float)
    out = np.interp(np.arange(int(len(a) * factor)) / factor, np.arange(len(a)), a)
    out *= rms / _rms(out)
    return np.clip(out, -32768, 32767).astype("<i2").tobytes()


class LiveKitEngine:
    """WebRTC AEC3 through livekit's AudioProcessingModule, which resamples the 24 kHz reference
    itself (the comparison: the same module, a 12 MB wheel)."""

    def __init__(self) -> None:
        from livekit import rtc

        self._rtc: Any = rtc
        self._apm = rtc.AudioProcessingModule(echo_cancellation=True)

    def process(self, near: bytes, far: bytes) -> bytes:
        rtc = self._rtc
        self._apm.process_reverse_stream(rtc.AudioFrame(far, 24000, 1, len(far) // 2))
        frame = rtc.AudioFrame(near, 16000, 1, len(near) // 2)
        self._apm.set_stream_delay_ms(0)  # required before each frame when echo cancellation is on
        self._apm.process_stream(frame)
        return bytes(frame.data.cast("B"))


class Tap:
    """The engine with what went in and came out of it recorded (bench instrumentation only)."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.near = bytearray()
        self.out = bytearray()

    def process(self, near: bytes, far: bytes) -> bytes:
        out: bytes = self.engine.process(near, far)
        self.near += near
        self.out += out
        return out


async def erle(
    pulse: PulseServer, engine: Callable[[], Any], delay_ms: int, gain_db: float
) -> tuple[float, float, float]:
    """(ERLE in dB over the answer after its first half second, the median ERLE of its 0.5 s
    pieces, CPU ms per 20 ms block) of the model speaking alone in the room."""
    from parla.voice.audio.devices import Microphone, Speaker
    from parla.voice.audio.echo import EchoCanceller, PlayedAudio

    model = _at_rate(speech(MODEL_SAYS, "kal16", pad_ms=50), 1.5, MODEL_RMS)
    played = PlayedAudio()
    tap = Tap(engine())
    canceller = EchoCanceller(played, tap)
    with pulse.room(delay_ms, gain_db):
        async with Microphone(echo=canceller) as mic, Speaker(reference=played) as speaker:
            await asyncio.sleep(0.3)
            speaker.play(model)
            end = time.monotonic() + len(model) / 48000 + 0.2
            while time.monotonic() < end:
                await mic.read()
    piece = 8000
    near = np.frombuffer(bytes(tap.near), "<i2")[piece : len(model) // 3]
    out = np.frombuffer(bytes(tap.out), "<i2")[piece : len(model) // 3]

    def db(a: np.ndarray, b: np.ndarray) -> float:
        return float(20 * np.log10(max(_rms(a), 1e-3) / max(_rms(b), 1e-3)))

    pieces = [db(near[i : i + piece], out[i : i + piece]) for i in range(0, len(near) - piece + 1, piece)]
    cpu = canceller.cpu_s / max(canceller.processed_blocks, 1) * 1000
    return db(near, out), float(np.median(pieces)), cpu


async def conversation(
    pulse: PulseServer, folder: Path, aec: bool, answers: int, bargeins: int
) -> tuple[int, list[float | None]]:
    """(self-interruptions in `answers` answers, barge-in delays in seconds or None when missed)."""
    from google import genai
    from google.genai import types

    from parla.daemon.chat_memory import ChatMemory
    from parla.memory.config import MemoryConfig
    from parla.memory.store.refused import RefusedTurns
    from parla.memory.store.sqlite.store import SQLiteChatStore
    from parla.voice.audio.devices import Microphone, Speaker
    from parla.voice.audio.echo import EchoCanceller, PlayedAudio
    from parla.voice.config import VoiceConfig
    from parla.voice.live.conversation import LiveConversation
    from tests.peers.live_emulator import LiveEmulator, VoiceDetector, make_certificate

    cert, key = make_certificate(folder)
    short = _at_rate(speech(SHORT_ANSWER, "kal16", pad_ms=50), 1.5, MODEL_RMS)
    long = _at_rate(speech(MODEL_SAYS, "kal16", pad_ms=50), 1.5, MODEL_RMS)
    user = _at_rate(speech(USER_SAYS, "slt", pad_ms=0), 1.0, MODEL_RMS * 10 ** (GAINS_DB[0] / 20))
    windows = np.frombuffer(user, "<i2")[: len(user) // 640 * 320].reshape(-1, 320)
    loud = np.sqrt(np.mean(windows.astype(float) ** 2, axis=1)) > VoiceDetector().threshold
    voice_starts = float(np.argmax(loud)) * 0.02  # flite's own lead-in before the voice
    cuts: list[bool] = []
    started: asyncio.Queue[float] = asyncio.Queue()
    bargein_cuts: list[float | None] = []
    user_done: asyncio.Queue[None] = asyncio.Queue()
    done = asyncio.Event()

    async def script(conn: Any) -> None:
        await conn.complete_setup()
        await asyncio.sleep(0.5)
        for _ in range(answers):
            cuts.append(not await conn.reply(SHORT_ANSWER, short, paced=True))
            await asyncio.sleep(0.5)
        for _ in range(bargeins):
            before = len(conn.barge_ins)
            await started.put(time.monotonic())
            await conn.reply(MODEL_SAYS, long, paced=True)
            bargein_cuts.append(conn.barge_ins[before] if len(conn.barge_ins) > before else None)
            await user_done.get()  # the next answer starts once the user has finished speaking
            await asyncio.sleep(0.5)
        done.set()
        await conn.closed.wait()

    played = PlayedAudio() if aec else None
    canceller = EchoCanceller(played) if played is not None else None
    async with (
        LiveEmulator(cert, key, script=script, voice_detector=VoiceDetector()) as live,
        SQLiteChatStore(folder / f"parla-{aec}.db") as store,
    ):
        import ssl

        client = genai.Client(
            api_key="test-key",
            http_options=types.HttpOptions(async_client_args={"ssl": ssl.create_default_context(cafile=str(cert))}),
        )
        chat_id = (await store.create_chat(title="bench")).chat.id
        with pulse.room(90, GAINS_DB[0]):
            async with (
                Microphone(echo=canceller) as mic,
                Speaker(reference=played) as speaker,
                LiveConversation(
                    client,
                    VoiceConfig(live_url=live.url),
                    ChatMemory(store, MemoryConfig(), chat_id, RefusedTurns(RefusedTurns.beside(store.path))),
                    microphone=mic,
                    speaker=speaker,
                ),
            ):
                # The user's voice goes through one player started beforehand, so the onset is
                # not late by a process start and a connection to the sound server.
                player = await asyncio.create_subprocess_exec(
                    *pacat_command("--playback", "micfeed", 16000, latency_ms=20),
                    stdin=asyncio.subprocess.PIPE,
                    env=pulse.env,
                )
                assert player.stdin is not None
                onsets: list[float] = []
                for _ in range(bargeins):
                    await started.get()
                    await asyncio.sleep(1.5)  # well into the answer
                    onsets.append(time.monotonic() + voice_starts)
                    player.stdin.write(user)
                    await player.stdin.drain()
                    await asyncio.sleep(len(user) / 32000 + 0.2)
                    await user_done.put(None)
                player.stdin.close()
                await player.wait()
                await done.wait()
    delays = [None if cut is None else cut - onset for cut, onset in zip(bargein_cuts, onsets, strict=True)]
    return sum(cuts), delays


async def run(out: Report, pulse: PulseServer, quick: bool, with_erle: bool) -> None:
    from parla.voice.audio.echo import WebRtcEngine

    engines: dict[str, Callable[[], Any]] = {"pywebrtc-audio": WebRtcEngine, "livekit": LiveKitEngine}
    table = Table(
        ["engine", "delay", "level", "ERLE dB", "median of 0.5 s", "CPU ms/20 ms block"],
        title="echo return loss enhancement in the room (a 9 s answer, model speaking alone, after its first 0.5 s)",
    )
    for name, engine in engines.items() if with_erle else ():
        for delay in DELAYS_MS:
            for gain in GAINS_DB:
                db, median, cpu = await erle(pulse, engine, delay, gain)
                table.row(name, f"{delay}ms", f"{gain:.0f}dB", f"{db:.1f}", f"{median:.1f}", f"{cpu:.3f}")
    if with_erle:
        out.table(table)
    answers, bargeins = (5, 3) if quick else (20, 10)
    folder = Path(tempfile.mkdtemp(prefix="parla-bench-echo-"))
    table = Table(
        [
            "echo cancellation",
            "self-interruptions",
            "already cut by the echo",
            "interrupting",
            "within 400 ms",
            "median ms",
            "max ms",
        ],
        title=f"in the room (90 ms, {GAINS_DB[0]:.0f} dB), the emulator's voice detector on: {answers} answers, "
        f"then {bargeins} barge-ins as loud as the echo",
    )
    for aec in (True, False):
        selfcuts, delays = await conversation(pulse, folder, aec, answers, bargeins)
        early = sum(d is not None and d < 0 for d in delays)  # cut by the echo before the user spoke
        heard = [d for d in delays if d is not None and d >= 0]
        fast = sum(d <= 0.4 for d in heard)
        table.row(
            "on" if aec else "off",
            f"{selfcuts}/{answers}",
            f"{early}/{bargeins}",
            f"{len(heard)}/{bargeins}",
            f"{fast}/{bargeins}",
            f"{np.median(heard) * 1000:.0f}" if heard else "",
            f"{max(heard) * 1000:.0f}" if heard else "",
        )
    out.table(table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer answers and barge-ins")
    parser.add_argument("--no-erle", action="store_true", help="only the conversation in the room")
    args, out = parse(parser)
    pulse = PulseServer(Path(tempfile.mkdtemp(prefix="parla-bench-pulse-"))).start()
    os.environ["PULSE_SERVER"] = pulse.env["PULSE_SERVER"]  # before sounddevice loads
    try:
        asyncio.run(run(out, pulse, args.quick, not args.no_erle))
    finally:
        pulse.stop()


if __name__ == "__main__":
    main()
