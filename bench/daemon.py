"""Daemon benchmark: `python -m bench.daemon [--quick]`. Prints its figures; asserts nothing.

Idle cost of `parla run` over 60 s (10 s with --quick) on a headless PulseAudio with virtual
devices: CPU (percent of one core, from /proc utime+stime) and RSS of the daemon process. In
push-to-talk the microphone and speaker streams are closed while idle; in wake mode the
microphone is open in `idle_block_ms` blocks and only what the energy gate passes is decoded.

Then talking (unless --no-talking): a session opened with `parla talk`, the Live emulator (in a
process of its own) answering each sentence spoken into the microphone with 2 s of audio, with
the service's activity detection and with the local one (Silero VAD: the models' CPU and memory
are the difference between the two). The baseline is push-to-talk idle, in the same run.

Then the wake phrase at the idle block size, through the gate: how many of the 12 test
utterances (4 flite voices x 3 sentences) activate it, and false activations in the 40 other
sentences (about 3 minutes of speech) the tests use.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import multiprocessing as mp
import os
import queue
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any

from bench.report import Report, Table, parse
from parla.daemon.control import DaemonNotRunning, send_command
from tests.peers.pulse import PulseServer

TICKS = os.sysconf("SC_CLK_TCK")
ANSWER_S = 2.0  # each answer's audio while talking
TALK = (
    "What is the weather like in Kyoto this afternoon?",
    "Remind me to water the plants tomorrow morning.",
    "How long does sourdough need to rise in a warm kitchen?",
)
# The emulator's energy detector also takes for an utterance the single loud 20 ms block that the
# microphone's path gives near the end of some answers; answering it would overlap the next
# sentence. A service's detector needs more speech than that to start a turn.
SPEECH_MIN_BYTES = 16_000 * 2 // 2  # 0.5 s
Figures = tuple[float, float, float]  # CPU % of a core, RSS mean MB, RSS max MB


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


@asynccontextmanager
async def _daemon(pulse: PulseServer, name: str, folder: Path, env: dict[str, str]) -> AsyncIterator[tuple[int, Path]]:
    """`parla run` in its own process, until its control socket answers; yields (pid, socket)."""
    socket = folder / f"{name}.sock"
    env = {
        **pulse.env,
        "PARLA_STORE_PATH": str(folder / f"{name}.db"),
        "PARLA_CONFIG_FILE": str(folder / "none.toml"),
        "PARLA_CONTROL_SOCKET": str(socket),
        "GEMINI_API_KEY": "bench-key-never-used-while-idle",
        "PARLA_LIVE_URL": "wss://127.0.0.1:9",
        # the memory inspector runs too (its idle cost counts), on a free port with its own token file
        "PARLA_UI_PORT": "0",
        "PARLA_UI_TOKEN_FILE": str(folder / f"{name}-ui-token"),
        **env,
    }
    log = folder / f"{name}.log"
    with log.open("wb") as stderr:
        # starting it does not block; only waiting for it would
        proc = subprocess.Popen([sys.executable, "-m", "parla.daemon", "run"], env=env, stderr=stderr)  # noqa: ASYNC220
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                await send_command(socket, "status", timeout=2)
                break
            except DaemonNotRunning:
                if proc.poll() is not None or time.monotonic() > deadline:
                    tail = log.read_text(errors="replace").splitlines()[-5:]
                    raise RuntimeError(f"the daemon did not start ({name}): " + " / ".join(tail)) from None
                await asyncio.sleep(0.2)
        yield proc.pid, socket
        await send_command(socket, "stop")
        proc.wait(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()


async def _sample(pid: int, seconds: float) -> Figures:
    """The process's CPU (percent of one core) and RSS (mean, max MB) over `seconds`."""
    cpu0, t0, rss = _cpu_seconds(pid), time.monotonic(), []
    while time.monotonic() - t0 < seconds:
        await asyncio.sleep(1)
        rss.append(_rss_mb(pid))
    cpu = (_cpu_seconds(pid) - cpu0) / (time.monotonic() - t0) * 100
    return cpu, sum(rss) / len(rss), max(rss)


async def measure(pulse: PulseServer, activation: str, seconds: float, folder: Path) -> Figures:
    # local detection as the talking figure has it: idle must not pay for its models
    env = {"PARLA_ACTIVATION": activation, "PARLA_TURN_DETECTION": "local"}
    async with _daemon(pulse, activation, folder, env) as (pid, _):
        await asyncio.sleep(3)  # past start-up
        return await _sample(pid, seconds)


def _emulator_main(cert: str, key: str, out: Any, answered: Any) -> None:
    """The Live emulator, in a process of its own so that its work is not the daemon's: each
    utterance it takes (by energy, or between the daemon's activity markers) is answered with
    ANSWER_S of paced audio, as the service streams it; `answered` hears of each answer's end."""
    from tests.peers.live_emulator import LiveEmulator, tone

    async def script(conn: Any) -> None:
        await conn.complete_setup()
        while not conn.closed.is_set():
            if len(await conn.utterance(timeout=3600)) < SPEECH_MIN_BYTES:
                continue
            await conn.heard("What is the weather like?")
            await conn.reply("It is sunny and warm all afternoon.", tone(ANSWER_S), paced=True)
            answered.put(time.monotonic())

    async def main() -> None:
        async with LiveEmulator(Path(cert), Path(key), script=script) as emulator:
            out.put(emulator.url)
            await asyncio.to_thread(out.get)  # until the parent puts None

    asyncio.run(main())


async def _answer(answered: Any, timeout: float = 30.0) -> None:
    """Until the emulator says an answer ended (polled: a thread blocked on the queue would
    outlive the cancelled talk)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            answered.get_nowait()
            return
        except queue.Empty:
            if time.monotonic() > deadline:
                raise RuntimeError(f"no answer within {timeout:g} s of the sentence") from None
            await asyncio.sleep(0.05)


async def measure_talking(pulse: PulseServer, detection: str, seconds: float, folder: Path) -> tuple[Figures, int]:
    """A session opened with `parla talk`, the user speaking a sentence into the microphone and
    the emulator answering, turn after turn, for `seconds`; also how many spoken turns were timed."""
    from tests.peers.gemini_rest import GeminiRestEmulator
    from tests.peers.live_emulator import make_certificate
    from tests.peers.pulse import speech

    cert, key = make_certificate(folder)
    ctx = mp.get_context("spawn")
    control, answered = ctx.Queue(), ctx.Queue()
    child = ctx.Process(target=_emulator_main, args=(str(cert), str(key), control, answered), daemon=True)
    child.start()
    rest = GeminiRestEmulator().start()
    sentences = [speech(s) for s in TALK]
    env = {
        "PARLA_ACTIVATION": "push_to_talk",
        "PARLA_TURN_DETECTION": detection,
        "PARLA_LIVE_URL": await asyncio.to_thread(control.get, True, 30),
        "PARLA_GEMINI_BASE_URL": rest.base_url,
        "GEMINI_API_KEY": "test-key",
        "PARLA_SUMMARIZER": "offline",
        "SSL_CERT_FILE": str(cert),  # the daemon trusts the emulator's certificate
    }
    try:
        async with _daemon(pulse, f"talk-{detection}", folder, env) as (pid, socket):
            opened = await send_command(socket, "talk", wait=30)
            if opened.get("result") != "listening":
                raise RuntimeError(f"the session did not open: {opened}")

            async def talk() -> None:
                # one answer per sentence in either detection mode, whatever the machine's load
                for n in itertools.count():
                    await pulse.play_into_mic(sentences[n % len(sentences)])
                    await _answer(answered)
                    await asyncio.sleep(0.5)  # the answer's end plays out, then the next sentence

            talking = asyncio.create_task(talk())
            await asyncio.sleep(3)  # past the session's start
            try:
                figures = await _sample(pid, seconds)
            finally:
                talking.cancel()
                with suppress(asyncio.CancelledError):
                    await talking
            status = await send_command(socket, "status")
            turns = (status.get("voice_to_voice") or {}).get("session", {}).get("turns", 0)
            if not turns:
                raise RuntimeError(f"no spoken turn was answered while talking ({detection} detection)")
            return figures, turns
    finally:
        control.put(None)
        child.join(5)
        rest.stop()


async def run(out: Report, pulse: PulseServer, seconds: float, talking: bool) -> None:
    folder = Path(tempfile.mkdtemp(prefix="parla-bench-daemon-"))
    rows = [
        ("push_to_talk (streams closed)", await measure(pulse, "push_to_talk", seconds, folder)),
        ("wake (microphone open, gated)", await measure(pulse, "wake", seconds, folder)),
    ]
    turns = {}
    for detection in ("service", "local") if talking else ():
        figures, turns[detection] = await measure_talking(pulse, detection, seconds, folder)
        rows.append((f"talking, {detection} detection", figures))
    base = rows[0][1]
    table = Table(
        ["mode", "CPU % of a core", "RSS mean MB", "RSS max MB", "CPU / push_to_talk idle", "RSS / push_to_talk idle"],
        title=f"daemon for {seconds:.0f} s per mode: idle in silence; talking: a sentence, the answer"
        f" ({ANSWER_S:g} s), again",
    )
    for name, (cpu, mean, peak) in rows:
        table.row(
            name,
            f"{cpu:.2f}",
            f"{mean:.1f}",
            f"{peak:.1f}",
            f"{cpu / max(base[0], 0.01):.2f}x",
            f"{mean / base[1]:.2f}x",
        )
    out.table(table)
    if talking:
        out.line(f"spoken turns answered in the session: service {turns['service']}, local {turns['local']}")
        (_, service), (_, local) = rows[2], rows[3]
        out.line(
            f"the local models: CPU {local[0] - service[0]:+.2f} points, RSS {local[1] - service[1]:+.1f} MB (mean)"
        )


def wake_accuracy(out: Report) -> None:
    import json

    from parla.daemon.config import DaemonConfig
    from parla.voice.audio.wake import WakePhrase
    from parla.voice.config import VoiceConfig
    from tests.peers.pulse import speech

    block = 32 * VoiceConfig().idle_block_ms
    threshold = DaemonConfig().wake_threshold

    def activations(wake: WakePhrase, pcm: bytes) -> int:
        return sum(wake.heard(pcm[i : i + block]) for i in range(0, len(pcm), block))

    phrases = ("hey parla", "okay, hey parla, what is on my calendar", "hey parla, switch to the Japan chat")
    heard = 0
    for voice in ("slt", "kal16", "awb", "rms"):
        wake = WakePhrase("hey parla", threshold)
        activations(wake, speech("the weather is nice today and I would like some tea", voice))
        heard += sum(activations(wake, speech(p, voice)) == 1 for p in phrases)
    chats = json.loads((Path(__file__).parents[1] / "tests" / "data" / "switch_set.json").read_text())["chats"]
    sentences = [line for turns in chats.values() for line in turns][:40]
    wake = WakePhrase("hey parla", threshold)
    audio = [speech(s, pad_ms=100) for s in sentences]
    false = sum(activations(wake, a) > 0 for a in audio)
    minutes = sum(map(len, audio)) / 32000 / 60
    out.line(
        f"wake phrase at {block // 32} ms blocks through the gate: heard {heard}/12, {false} false in {minutes:.1f} min"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10 s per mode instead of 60")
    parser.add_argument("--seconds", type=float, help="seconds per mode (overrides --quick)")
    parser.add_argument("--no-talking", action="store_true", help="idle modes only")
    parser.add_argument("--no-wake-accuracy", action="store_true", help="skip the wake phrase's accuracy")
    args, out = parse(parser)
    pulse = PulseServer(Path(tempfile.mkdtemp(prefix="parla-bench-pulse-"))).start()
    seconds = args.seconds or (10 if args.quick else 60)
    try:
        asyncio.run(run(out, pulse, seconds, not args.no_talking))
    finally:
        pulse.stop()
    if not args.no_wake_accuracy:
        wake_accuracy(out)


if __name__ == "__main__":
    main()
