"""Which chat `parla run` starts in when none is named, and that it says which: where the user last
talked with Parla, or the chat they last chose (a switch, a new chat) without a word said since;
never an imported chat, and never one only looked at; a new chat when they never talked with
Parla. The daemon runs as its own process, as `parla run` does, over the Live emulator."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Self

import pytest

from parla.daemon.control import DaemonNotRunning, send_command
from tests.conftest import eventually
from tests.daemon.conftest import process_env
from tests.peers.live_emulator import echo

pytestmark = pytest.mark.tier("process")


def _parla(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "parla.daemon", *args], env=env, capture_output=True, text=True, timeout=120, check=False
    )


def _chats(tmp_path: Path, env: dict[str, str], *chats: tuple[str, str]) -> list[str]:
    """Import chats (id, title) of two turns each; their ids in the store."""
    source = tmp_path / "chats.jsonl"
    lines = [
        json.dumps(
            {
                "id": ref,
                "title": title,
                "turns": [{"role": "user", "text": f"About {title}."}, {"role": "model", "text": "Yes."}],
            }
        )
        for ref, title in chats
    ]
    source.write_text("\n".join(lines) + "\n")
    done = _parla(env, "-q", "import", str(source))
    assert done.returncode == 0, done.stderr
    listed = json.loads(_parla(env, "chats", "--json").stdout)
    return [c["id"] for c in listed if c["title"] in {title for _, title in chats}]


class Run:
    """`parla run` as its own process: the line it says it runs in, and its chat."""

    def __init__(self, env: dict[str, str], socket: Path) -> None:
        self.env, self.socket = env, socket
        self.line = ""
        self.proc: subprocess.Popen[str] | None = None

    async def __aenter__(self) -> Self:
        self.proc = subprocess.Popen(  # noqa: ASYNC220 - starting it does not block
            [sys.executable, "-m", "parla.daemon", "run"], env=self.env, stderr=subprocess.PIPE, text=True
        )
        assert self.proc.stderr is not None
        while not self.line.startswith("Parla is running in"):
            line = await asyncio.wait_for(asyncio.to_thread(self.proc.stderr.readline), 60)
            assert line, f"the daemon exited: {self.proc.stderr.read()}"
            self.line = line.strip()

        async def up() -> bool:
            try:
                await send_command(self.socket, "status", timeout=2)
            except DaemonNotRunning:
                return False
            return True

        await eventually(up, timeout=30, what="the daemon to answer")
        return self

    async def chat(self) -> str:
        return str((await send_command(self.socket, "status"))["chat"]["id"])

    async def __aexit__(self, *exc: object) -> None:
        assert self.proc is not None
        if self.proc.poll() is None:
            await send_command(self.socket, "stop")
        try:
            await asyncio.to_thread(self.proc.wait, 30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()


async def test_a_run_starts_where_the_user_last_talked_or_chose_never_in_an_import(
    pulse, live, gemini, live_certificate, tmp_path
):
    # the first run after an import continued the newest imported chat, and a restart after a
    # switch without a word said went back to the chat before it (issue 42, item 16)
    live.script = echo
    socket = tmp_path / "ctl.sock"
    env = process_env(pulse, live, gemini, live_certificate, tmp_path, PARLA_CONTROL_SOCKET=str(socket))
    imported = _chats(tmp_path, env, ("ferry", "Ferry to Naxos"), ("bread", "Sourdough bread"))

    async with Run(env, socket) as run:  # nothing said with Parla yet: a new chat, said so
        first = await run.chat()
        assert first not in imported
        assert "a new chat" in run.line and "you have not talked with Parla yet" in run.line, run.line
        answer = await send_command(socket, "say", text="remember the blue door", wait=20, timeout=30)
        assert answer["result"] == "answered"

    later = _chats(tmp_path, env, ("tax", "Tax return"))  # imported after: newer than what was said
    async with Run(env, socket) as run:
        assert await run.chat() == first and "where you last talked with Parla" in run.line, run.line
        moved = await send_command(socket, "switch", query=later[0])  # chosen, nothing said there
        assert moved["result"] == "switching"

    async with Run(env, socket) as run:
        assert await run.chat() == later[0] and "the chat you last chose" in run.line, run.line
        status = _parla(env, "status")
        assert "Tax return" in status.stdout and "the chat you last chose" in status.stdout, status.stdout

    # without this device's note (its first start, or the note lost), the chat where something was
    # last said through Parla, found in the store; an imported chat's turns do not count
    (notes,) = tmp_path.glob("parla.last-chat.json")
    notes.unlink()
    async with Run(env, socket) as run:
        assert await run.chat() == first and "where you last talked with Parla" in run.line, run.line
