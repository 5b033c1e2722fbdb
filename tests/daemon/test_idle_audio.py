"""A frugal idle: in push-to-talk and while muted the microphone stream is closed, the speaker
stream is closed whenever no session is open, and the wake phrase is listened for in larger
blocks; a session opens both with the usual blocks and closes them again when it ends."""

from __future__ import annotations

import pytest

from parla.daemon.control import send_command
from parla.daemon.settings import Settings
from tests.conftest import eventually
from tests.daemon.conftest import running

pytestmark = pytest.mark.tier("audio")


async def ctl(settings: Settings, cmd: str, **args):
    return await send_command(settings.control_socket, cmd, **args)


async def test_push_to_talk_closes_both_streams_while_idle(daemon_settings, live):
    async with running(daemon_settings) as (daemon, _, _):
        voice = daemon._voice
        assert voice is not None
        await eventually(lambda: daemon.status.state == "idle" and not voice.speaker.is_open, what="idle")
        status = await ctl(daemon_settings, "status")
        assert status["microphone_open"] is False and not voice.microphone.is_open
        assert (await ctl(daemon_settings, "talk"))["result"] == "activating"
        await live.wait_connections(1)
        await eventually(lambda: daemon.status.state == "active", what="the session")
        assert voice.microphone.is_open and voice.speaker.is_open
        assert voice.microphone.block_frames == 16 * daemon_settings.audio_block_ms
        await ctl(daemon_settings, "mute")
        assert not voice.microphone.is_open, "muted, the microphone is still open"
        await ctl(daemon_settings, "unmute")
        assert voice.microphone.is_open
        # nobody speaks: the session closes after the idle timeout, and so do the streams
        await eventually(lambda: daemon.status.state == "idle", timeout=10, what="the session to close")
        await eventually(lambda: not voice.speaker.is_open, what="the speaker to close")
        assert not voice.microphone.is_open


async def test_wake_listens_in_larger_blocks_and_not_while_muted(daemon_settings):
    settings = daemon_settings.model_copy(update={"activation": "wake"})
    async with running(settings) as (daemon, _, _):
        voice = daemon._voice
        assert voice is not None
        await eventually(lambda: voice.microphone.is_open and not voice.speaker.is_open, what="listening")
        assert voice.microphone.block_frames == 16 * settings.idle_block_ms
        assert (await ctl(settings, "mute"))["result"] == "muted"
        assert (await ctl(settings, "status"))["microphone_open"] is False
        await ctl(settings, "unmute")
        assert (await ctl(settings, "status"))["microphone_open"] is True
