"""Daemon benchmark: `python -m bench.daemon [--quick]`. Prints its figures; asserts nothing.

Idle cost of `parla run` over 60 s (10 s with --quick) on a headless PulseAudio with virtual
devices: CPU (percent of one core, from /proc utime+stime) and RSS of the daemon process. In
push-to-talk the microphone and speaker streams are closed while idle; in wake mode the
microphone is open in `idle_block_ms` blocks and only what the energy gate passes is decoded.

Then the wake phrase at the idle block size, through the gate: how many of the 12 test
utterances (4 flite voices x 3 sentences) activate it, and false activations in the 40 other
sentences (about 3 minutes of speech) the tests use.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.report import Report, Table, parse
from parla.daemon.control import DaemonNotRunning, send_command
from tests.peers.pulse import PulseServer

TICKS = os.sysconf("SC_CLK_TCK")


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def measure(pulse: PulseServer, activation: str, seconds: float, folder: Path) -> tuple[float, float, float]:
    socket = folder / f"{activation}.sock"
    env = {
        **pulse.env,
        "PARLA_STORE_PATH": str(folder / f"{activation}.db"),
        "PARLA_CONFIG_FILE": str(folder / "none.toml"),
        "PARLA_ACTIVATION": activation,
        "PARLA_CONTROL_SOCKET": str(socket),
        "GEMINI_API_KEY": "bench-key-never-used-while-idle",
        "PARLA_LIVE_URL": "wss://127.0.0.1:9",
        # the memory inspector runs too (its idle cost counts), on a free port with its own token file
        "PARLA_UI_PORT": "0",
        "PARLA_UI_TOKEN_FILE": str(folder / f"{activation}-ui-token"),
    }
    # starting it does not block; only waiting for it would
    proc = subprocess.Popen([sys.executable, "-m", "parla.daemon", "run"], env=env, stderr=subprocess.DEVNULL)  # noqa: ASYNC220
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                await send_command(socket, "status", timeout=2)
                break
            except DaemonNotRunning:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the daemon did not start ({activation})") from None
                await asyncio.sleep(0.2)
        await asyncio.sleep(3)  # past start-up
        cpu0, t0, rss = _cpu_seconds(proc.pid), time.monotonic(), []
        while time.monotonic() - t0 < seconds:
            await asyncio.sleep(1)
            rss.append(_rss_mb(proc.pid))
        cpu = (_cpu_seconds(proc.pid) - cpu0) / (time.monotonic() - t0) * 100
        await send_command(socket, "stop")
        proc.wait(timeout=20)
        return cpu, sum(rss) / len(rss), max(rss)
    finally:
        if proc.poll() is None:
            proc.kill()


async def run(out: Report, pulse: PulseServer, seconds: float) -> None:
    folder = Path(tempfile.mkdtemp(prefix="parla-bench-daemon-"))
    base = await measure(pulse, "push_to_talk", seconds, folder)
    wake = await measure(pulse, "wake", seconds, folder)
    table = Table(
        ["mode", "CPU % of a core", "RSS mean MB", "RSS max MB"], title=f"daemon idle for {seconds:.0f} s (silence)"
    )
    for name, (cpu, mean, peak) in (("push_to_talk (streams closed)", base), ("wake (microphone open, gated)", wake)):
        table.row(name, f"{cpu:.2f}", f"{mean:.1f}", f"{peak:.1f}")
    table.row("wake / baseline", f"{wake[0] / max(base[0], 0.01):.2f}x", f"{wake[1] / base[1]:.2f}x", "")
    out.table(table)


def wake_accuracy(out: Report) -> None:
    import json

    from parla.daemon.config import DaemonConfig
    from parla.daemon.wake import WakePhrase
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
    args, out = parse(parser)
    pulse = PulseServer(Path(tempfile.mkdtemp(prefix="parla-bench-pulse-"))).start()
    try:
        asyncio.run(run(out, pulse, 10 if args.quick else 60))
    finally:
        pulse.stop()
    wake_accuracy(out)


if __name__ == "__main__":
    main()
