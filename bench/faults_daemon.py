"""`parla run` as its own process for the fault suite (`bench.faults` and its scenarios in
`bench.faults_locked`, `bench.faults_flood`): its environment, its start, and the peers it talks to
(the Live emulator answering every typed turn, a headless sound server)."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from bench.faults_checks import Figures
from parla.daemon.control import CommandError, DaemonNotRunning, send_command
from tests.peers.live_emulator import LiveConnection, LiveEmulator, make_certificate, tone
from tests.peers.pulse import PulseServer


def environment(folder: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PARLA_") and k not in ("GEMINI_API_KEY",)}
    env.pop("GOOGLE_API_KEY", None)
    env.update(
        {
            "PARLA_CONFIG_FILE": str(folder / "none.toml"),
            "PARLA_STORE_PATH": str(folder / "parla.db"),
            "PARLA_SUMMARIZER": "offline",
            "PARLA_EMBEDDER": "offline",
            "PARLA_LOG_LEVEL": "INFO",
            "PARLA_UI_PORT": "0",
            "PARLA_UI_TOKEN_FILE": str(folder / "ui-token"),
        }
    )
    env.update(extra)
    return env


def daemon_environment(folder: Path, peers: LivePeers, socket: Path, **extra: str) -> dict[str, str]:
    """`parla run` on the Live emulator (answering typed turns), opened by `say` or `talk`."""
    return environment(
        folder,
        PULSE_SERVER=peers.pulse_server,
        SSL_CERT_FILE=str(peers.cert),
        PARLA_LIVE_URL=peers.live.url,
        GEMINI_API_KEY=peers.live.api_key,
        PARLA_GEMINI_BASE_URL="http://127.0.0.1:9",  # nothing but the Live API is used
        PARLA_CONTROL_SOCKET=str(socket),
        PARLA_ACTIVATION="push_to_talk",
        PARLA_IDLE_TIMEOUT="600",
        PARLA_CUES="false",
        **extra,
    )


async def start_daemon(env: dict[str, str], socket: Path, log: Path) -> asyncio.subprocess.Process:
    with log.open("a") as ferr:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "parla.daemon", "run", env=env, stdout=asyncio.subprocess.DEVNULL, stderr=ferr
        )
    deadline = time.monotonic() + 60
    while True:
        try:
            await send_command(socket, "status", timeout=2)
            return proc
        except (DaemonNotRunning, CommandError):
            if proc.returncode is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the daemon did not start: {log.read_text()[-2000:]}") from None
            await asyncio.sleep(0.05)


@dataclass
class LivePeers:
    live: LiveEmulator
    pulse_server: str  # the sound server's address (PULSE_SERVER)
    cert: Path  # the emulator's certificate


async def with_live_peers(folder: Path, work: Callable[[LivePeers], Awaitable[Figures]]) -> Figures:
    """`work` with the Live emulator and the sound server up."""
    cert = make_certificate(folder)
    pulse = PulseServer(folder / "pulse").start()
    try:
        async with LiveEmulator(*cert) as live:
            figures = await work(LivePeers(live, pulse.env["PULSE_SERVER"], cert[0]))
            if live.errors:
                raise live.errors[0]
            return figures
    finally:
        pulse.stop()


class Answers:
    """The Live emulator's side: every typed turn is answered by voice, then turnComplete."""

    def __init__(self) -> None:
        self.answered: dict[str, float] = {}
        self.changed = asyncio.Event()

    async def script(self, conn: LiveConnection) -> None:
        await conn.complete_setup()
        try:
            while True:
                frame = await conn.expect("client_content", timeout=3600)
                if not frame.body.get("turn_complete"):
                    continue  # the chat's history, seeded into a fresh session
                text = frame.body["turns"][-1]["parts"][0]["text"]
                await conn.reply(f"You said {text}", tone(0.1, 500.0), chunk_ms=50)
                self.answered[text] = time.monotonic()
                self.changed.set()
        except AssertionError:
            if not conn.closed.is_set():
                raise  # anything but the daemon going away is the emulator's failure

    async def wait(self, text: str, timeout: float) -> None:
        until = asyncio.get_running_loop().time() + timeout
        while text not in self.answered:
            self.changed.clear()
            async with asyncio.timeout_at(until):  # a timer per wait: see parla.kernel.tasks
                await self.changed.wait()
