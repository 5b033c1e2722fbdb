"""Voice-to-voice time through the daemon: a spoken question into the virtual microphone, the
emulator's answer out of the virtual speaker; `parla status` (text and --json) and the
inspector's state show the session's figures, and the day's once the session is over."""

from __future__ import annotations

import asyncio
import json

import pytest
from typer.testing import CliRunner

from parla.daemon.cli import app
from parla.daemon.control import send_command
from tests.conftest import eventually
from tests.daemon.conftest import running
from tests.peers.live_emulator import tone
from tests.peers.pulse import speech

pytestmark = pytest.mark.tier("audio")


async def test_a_spoken_turn_is_timed_in_status_and_the_inspector(daemon_settings, live, pulse):
    async def script(conn):
        await conn.complete_setup()
        await conn.utterance()
        await asyncio.sleep(0.2)
        await conn.reply("It is noon.", tone(0.3, 587.0))
        await conn.closed.wait()

    live.script = script
    settings = daemon_settings.model_copy(update={"idle_timeout": 3.0})
    env = {"PARLA_CONTROL_SOCKET": str(settings.control_socket)}
    async with running(settings) as (daemon, _mem, _chat_id):
        assert (await send_command(settings.control_socket, "talk"))["result"] == "activating"
        await eventually(lambda: daemon.status.state == "active", what="the session")
        await pulse.play_into_mic(speech("what time is it"))
        await eventually(lambda: daemon._conversation and daemon._conversation.latency.turns, timeout=10)
        status = await send_command(settings.control_socket, "status")
        session = status["voice_to_voice"]["session"]
        assert session["turns"] == 1 and session["service_p50_ms"] >= 200
        assert session["total_p50_ms"] == pytest.approx(session["parla_p50_ms"] + session["service_p50_ms"], abs=0.2)
        assert status["voice_to_voice"]["day"] == session
        text = await asyncio.to_thread(CliRunner().invoke, app, ["status"], env=env)
        assert "voice to voice (session, 1 turns): p50" in text.stdout, text.output
        assert daemon._live_state().voice_to_voice.startswith("voice to voice: session p50")

        await eventually(lambda: daemon.status.state == "idle", timeout=10, what="the idle timeout")
        after = json.loads((await asyncio.to_thread(CliRunner().invoke, app, ["status", "--json"], env=env)).stdout)
        assert after["voice_to_voice"]["session"]["turns"] == 0 and after["voice_to_voice"]["day"]["turns"] == 1
        assert "today p50" in daemon._live_state().voice_to_voice
