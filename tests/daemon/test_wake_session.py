"""The wake phrase through the microphone of a running daemon: other speech opens nothing, the
phrase opens a session."""

from __future__ import annotations

import asyncio

import pytest

from tests.daemon.conftest import running
from tests.peers.pulse import speech

pytestmark = pytest.mark.tier("audio")


async def test_the_phrase_through_the_microphone_opens_a_session(daemon_settings, live, pulse):
    settings = daemon_settings.model_copy(update={"activation": "wake"})
    async with running(settings) as (daemon, _, _):
        await pulse.play_into_mic(speech("please pass the salt, the weather is nice today"))
        await asyncio.sleep(0.5)
        assert live.connections == [] and daemon.status.state == "idle"
        await pulse.play_into_mic(speech("hey parla"))
        # a bound on liveness, not on speed: on a starved machine the spotter runs behind the audio
        await live.wait_connections(1, timeout=20)
        assert daemon.status.wake_detections == 1
