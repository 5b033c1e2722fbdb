"""Voice benchmarks: `python -m bench.voice [--quick]`. Prints its figures; asserts nothing.

Runs headless on its own PulseAudio with virtual devices (tests/peers/pulse.py), with the Live
emulator in a child process so that the CPU figure is Parla's alone. Times are CLOCK_MONOTONIC,
shared by the processes; sound is timed where it is heard, on the speaker's monitor (a recorder
with 5 ms pieces, so figures include up to ~5 ms of the recorder's own buffering).

- mic → websocket: from the PortAudio callback that captured a block to the emulator receiving
  it, through the Live conversation and the SDK. Baseline: the same blocks sent by a bare
  `websockets` client over the same kind of TLS connection.
- emulator → speaker: from the emulator sending an audio chunk to its first sound on the monitor.
  Baseline: the same chunk handed straight to `Speaker.play` (the sound path alone).
- barge-in: from the emulator sending `interrupted` to the last sound on the monitor. Baseline:
  `Speaker.flush` called directly.
- CPU while streaming both ways (speech into the microphone, answers out): percent of one core
  for the whole conversation process. Baseline: the microphone and speaker streams alone.
- voice to voice: spoken questions into the microphone, answered by the emulator
  `SERVICE_DELAY_S` after it took the end of the utterance (its stand-in for the service's voice
  detection waits `UTTERANCE_SILENCE_MS` of quiet): the product's own measure (voice.live.latency),
  Parla's part and the service's. Baseline: the emulator's wait, timed in the emulator.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import os
import ssl
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.memory import percentile
from bench.report import Report, Table, parse
from tests.peers.pulse import PulseServer, speech

BURST_S = 0.1
TONE_HZ = 700.0
SERVICE_DELAY_S = 0.3
UTTERANCE_SILENCE_MS = 300


def _burst() -> bytes:
    from tests.peers.live_emulator import tone

    return tone(BURST_S, TONE_HZ)


def _emulator_main(cert: str, key: str, bursts: int, bargeins: int, questions: int, out: Any) -> None:
    """The child process: the Live emulator with the bench's script, plus a bare TLS websocket
    sink for the baseline; reports what it received and when it sent what."""
    from websockets.asyncio.server import serve

    from tests.peers.live_emulator import LiveEmulator, tone

    async def main() -> None:
        report: dict[str, Any] = {"frames": [], "bursts": [], "interrupts": [], "sink": [], "waits": []}
        done = asyncio.Event()
        answered = asyncio.Event()

        async def script(conn: Any) -> None:
            await conn.complete_setup()
            if conn.index == 1:  # the voice-to-voice conversation
                for _ in range(questions):
                    await conn.utterance(silence_ms=UTTERANCE_SILENCE_MS)
                    took = time.monotonic()
                    await asyncio.sleep(SERVICE_DELAY_S)
                    report["waits"].append(time.monotonic() - took + UTTERANCE_SILENCE_MS / 1000)
                    await conn.reply("", tone(0.3, TONE_HZ))
                answered.set()
                await conn.closed.wait()
                return
            await asyncio.sleep(1.0)
            for _ in range(bursts):
                report["bursts"].append(time.monotonic())
                await conn.reply("", _burst(), chunk_ms=int(BURST_S * 1000), complete=False)
                await asyncio.sleep(0.5)
            for _ in range(bargeins):
                await conn.reply("", tone(2.0, TONE_HZ), complete=False)
                await asyncio.sleep(0.6)
                report["interrupts"].append(time.monotonic())
                await conn.interrupted()
                await asyncio.sleep(0.4)
            report["frames"] = [(f.received_at, f.audio) for f in conn.frames if f.audio]
            done.set()
            await conn.closed.wait()

        sink_done = asyncio.Event()

        async def sink(ws: Any) -> None:
            async for message in ws:
                report["sink"].append((time.monotonic(), message))
            sink_done.set()

        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(cert, key)
        async with (
            LiveEmulator(Path(cert), Path(key), script=script) as emulator,
            serve(sink, "127.0.0.1", 0, ssl=tls) as sink_server,
        ):
            out.put((emulator.url, sink_server.sockets[0].getsockname()[1]))
            await done.wait()
            out.put(("baseline-ready", None))
            await sink_done.wait()  # the baseline client sends its blocks
            await answered.wait()
            out.put(report)

    asyncio.run(main())


def _ms(values: list[float]) -> list[str]:
    if not values:
        return ["", "", "0"]
    return [f"{percentile(values, 0.5):.1f}", f"{percentile(values, 0.95):.1f}", str(len(values))]


def _row(table: Table, label: str, ours: list[float], base: list[float] | None = None) -> None:
    """A figure, and under it its baseline measured in the same run with the ratio of their p50s."""
    table.row(label, *_ms(ours), "")
    if base is not None:
        ratio = (
            f"{percentile(ours, 0.5) / percentile(base, 0.5):.2f}x" if ours and base and percentile(base, 0.5) else ""
        )
        table.row(f"{label}: baseline", *_ms(base), ratio)


def _sound_times(chunks: list[tuple[float, bytes]], threshold: int = 1000) -> list[float]:
    return [t for t, piece in chunks if np.abs(np.frombuffer(piece, "<i2")).max(initial=0) > threshold]


def _first_after(times: list[float], start: float, within: float = 0.4) -> float | None:
    return next((t for t in times if start <= t <= start + within), None)


def _last_between(times: list[float], start: float, end: float) -> float | None:
    inside = [t for t in times if start - 0.2 <= t <= end]
    return inside[-1] if inside else None


async def run(out: Report, pulse: PulseServer, quick: bool) -> None:
    from google import genai
    from google.genai import types

    from parla.daemon.chat_memory import ChatMemory
    from parla.memory.config import MemoryConfig
    from parla.memory.store.refused import RefusedTurns
    from parla.memory.store.sqlite.store import SQLiteChatStore
    from parla.voice.audio.devices import Microphone, Speaker
    from parla.voice.config import VoiceConfig
    from parla.voice.live.conversation import LiveConversation
    from tests.peers.live_emulator import make_certificate, tone

    bursts, bargeins, questions = (5, 3, 5) if quick else (12, 6, 20)
    tmp = Path(tempfile.mkdtemp(prefix="parla-bench-voice-"))
    cert, key = make_certificate(tmp)
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    child = ctx.Process(
        target=_emulator_main, args=(str(cert), str(key), bursts, bargeins, questions, queue), daemon=True
    )
    child.start()
    url, sink_port = await asyncio.to_thread(queue.get, True, 30)

    class TimedMicrophone(Microphone):
        """Notes when each block left PortAudio's callback (bench instrumentation only)."""

        captured_at: dict[bytes, float]

        def _callback(self, indata: Any, frames: int, when: Any, status: Any) -> None:
            self.captured_at.setdefault(bytes(indata), time.monotonic())
            super()._callback(indata, frames, when, status)

    client_ssl = ssl.create_default_context(cafile=str(cert))
    client = genai.Client(api_key="test-key", http_options=types.HttpOptions(async_client_args={"ssl": client_ssl}))
    config = VoiceConfig(live_url=url)
    said = b"".join(speech(s, pad_ms=100) for s in ("the quick brown fox jumps over the lazy dog",) * 3)

    # Baseline CPU: the audio streams alone, for as long as the conversation will stream.
    window = 1.0 + bursts * (BURST_S + 0.5) + bargeins * 1.0
    async with Microphone() as mic, Speaker():
        cpu0, wall0 = time.process_time(), time.monotonic()
        deadline = wall0 + min(window, 8.0)
        while time.monotonic() < deadline:
            await mic.read()
        base_cpu = (time.process_time() - cpu0) / (time.monotonic() - wall0) * 100

    recorder = pulse.record_speaker()
    async with SQLiteChatStore(tmp / "parla.db") as store:
        chat_id = (await store.create_chat(title="bench")).chat.id

        def conversation(microphone: Microphone, speaker: Speaker) -> LiveConversation:
            memory = ChatMemory(store, MemoryConfig(), chat_id, RefusedTurns(RefusedTurns.beside(store.path)))
            return LiveConversation(client, config, memory, microphone=microphone, speaker=speaker)

        mic = TimedMicrophone()
        mic.captured_at = {}
        async with (
            mic,
            Speaker() as speaker,
            conversation(mic, speaker),
        ):
            cpu0, wall0 = time.process_time(), time.monotonic()
            player = asyncio.create_task(pulse.play_into_mic(said))
            ready = await asyncio.to_thread(queue.get, True, 120)
            assert ready[0] == "baseline-ready"
            cpu = (time.process_time() - cpu0) / (time.monotonic() - wall0) * 100
            await player

        # Baseline transport: the captured blocks sent by a bare websockets client.
        from websockets.asyncio.client import connect

        blocks = [b for b in mic.captured_at if any(b)][:200]
        sent_at: dict[bytes, float] = {}
        async with connect(f"wss://127.0.0.1:{sink_port}", ssl=client_ssl) as ws:
            for block in blocks:
                sent_at[block] = time.monotonic()
                await ws.send(block)
                await asyncio.sleep(0.02)
        # Baselines of the sound path, on the same devices and recorder.
        direct_play, direct_flush = [], []
        async with Speaker() as speaker:
            for _ in range(bursts):
                start = time.monotonic()
                speaker.play(_burst())
                direct_play.append(start)
                await asyncio.sleep(0.5)
            for _ in range(bargeins):
                speaker.play(tone(2.0, TONE_HZ))
                await asyncio.sleep(0.6)
                direct_flush.append(time.monotonic())
                speaker.flush()
                await asyncio.sleep(0.4)

        # Voice to voice: spoken questions, each answered after the emulator's fixed wait.
        question = speech("what time is it", pad_ms=100)
        async with (
            Microphone() as mic2,
            Speaker() as speaker,
            conversation(mic2, speaker) as timed,
        ):
            for n in range(1, questions + 1):
                await pulse.play_into_mic(question)
                deadline = time.monotonic() + 10
                while len(timed.latency.turns) < n and time.monotonic() < deadline:
                    await asyncio.sleep(0.05)
                await asyncio.sleep(0.5)
            turns = list(timed.latency.turns)

    report = await asyncio.to_thread(queue.get, True, 60)
    recorder.stop()
    child.join(5)

    arrived = {audio: at for at, audio in report["frames"]}
    mic_ms = [(arrived[b] - t) * 1000 for b, t in mic.captured_at.items() if any(b) and b in arrived]
    sink_ms = [(at - sent_at[m]) * 1000 for at, m in report["sink"] if m in sent_at]
    sounds = _sound_times(recorder.chunks)
    out_ms = [(s - t) * 1000 for t in report["bursts"] if (s := _first_after(sounds, t)) is not None]
    base_out_ms = [(s - t) * 1000 for t in direct_play if (s := _first_after(sounds, t)) is not None]
    stop_ms = [(s - t) * 1000 for t in report["interrupts"] if (s := _last_between(sounds, t, t + 0.35))]
    base_stop_ms = [(s - t) * 1000 for t in direct_flush if (s := _last_between(sounds, t, t + 0.35))]

    columns = ["", "p50 ms", "p95 ms", "n", "ratio"]
    table = Table(
        columns, title=f"voice path, 20 ms blocks, {bursts} answers, {bargeins} barge-ins (sound timed at the monitor)"
    )
    _row(table, "mic block -> websocket", mic_ms, sink_ms)
    _row(table, "emulator audio -> speaker", out_ms, base_out_ms)
    _row(table, "barge-in stop", [max(v, 0.0) for v in stop_ms], [max(v, 0.0) for v in base_stop_ms])
    out.table(table)
    out.line(f"CPU while streaming: {cpu:.1f} % of a core; baseline (audio streams alone) {base_cpu:.1f} %")
    table = Table(
        columns,
        title=f"voice to voice, {questions} spoken questions, emulator answers {SERVICE_DELAY_S * 1000:.0f} ms"
        " after the utterance",
    )
    _row(table, "Parla part (target p95 <= 120)", [t.parla_ms for t in turns])
    _row(table, "service part", [t.service_ms for t in turns], [w * 1000 for w in report["waits"]])
    _row(table, "whole", [t.total_ms for t in turns])
    out.table(table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    args, out = parse(parser)
    pulse = PulseServer(Path(tempfile.mkdtemp(prefix="parla-bench-pulse-"))).start()
    os.environ["PULSE_SERVER"] = pulse.env["PULSE_SERVER"]  # before sounddevice loads
    try:
        asyncio.run(run(out, pulse, args.quick))
    finally:
        pulse.stop()


if __name__ == "__main__":
    main()
