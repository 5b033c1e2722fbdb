"""`parla talk` waits for the session like `say` does: `Listening.` once the Live service set it
up, or exit 1 with the reason when it cannot open (the emulator refuses every connection)."""

from __future__ import annotations

import asyncio

import pytest
from typer.testing import CliRunner

from parla.daemon.cli import app
from tests.daemon.conftest import running

pytestmark = pytest.mark.tier("audio")


async def test_talk_says_listening_once_the_session_is_up(daemon_settings, live):
    async def script(conn):
        await conn.complete_setup()
        await conn.closed.wait()

    live.script = script
    env = {"PARLA_CONTROL_SOCKET": str(daemon_settings.control_socket)}
    async with running(daemon_settings) as (daemon, _mem, _chat_id):
        talk = await asyncio.to_thread(CliRunner().invoke, app, ["talk", "--wait", "20"], env=env)
        assert talk.exit_code == 0 and talk.stdout == "Listening.\n", talk.output
        assert daemon.status.state == "active"
        again = await asyncio.to_thread(CliRunner().invoke, app, ["talk"], env=env)
        assert again.stdout == "A session is already open.\n"


async def test_talk_exits_1_with_the_reason_when_the_session_cannot_open(daemon_settings, live):
    async def script(conn):
        await conn.close(1008, "API key not valid. Please pass a valid API key.")

    live.script = script
    env = {"PARLA_CONTROL_SOCKET": str(daemon_settings.control_socket)}
    async with running(daemon_settings):
        talk = await asyncio.to_thread(CliRunner().invoke, app, ["talk", "--wait", "30"], env=env)
    assert talk.exit_code == 1, talk.output
    assert "parla: error: the session could not open:" in talk.stderr and "API key not valid" in talk.stderr
    assert "Listening" not in talk.stdout
