"""The service's rules when the client decides who has the floor, through the real google-genai SDK
and the Live emulator: activity markers are refused while automatic activity detection is on; with
it off, activityStart cuts the answer under way (unless the setup asked for NO_INTERRUPTION) and
the user's turn is the audio between activityStart and activityEnd."""

from __future__ import annotations

import asyncio

import pytest
from google.genai import errors, types
from websockets.exceptions import ConnectionClosed

from parla.voice.live.close_codes import close_code
from tests.peers.live_emulator import LiveConnection, tone

pytestmark = pytest.mark.tier("fast")

MODEL = "gemini-3.8-live"
SPEECH = tone(0.2, 300, rate=16_000)
NOISE = tone(0.2, 1000, rate=16_000, amplitude=2000)


def setup(live, disabled: bool, handling: types.ActivityHandling | None = None) -> types.LiveConnectConfig:
    return types.LiveConnectConfig(
        http_options=types.HttpOptions(base_url=live.url),
        response_modalities=[types.Modality.AUDIO],
        realtime_input_config=types.RealtimeInputConfig(
            automatic_activity_detection=types.AutomaticActivityDetection(disabled=disabled),
            activity_handling=handling,
        ),
    )


async def audio(session, pcm: bytes) -> None:
    await session.send_realtime_input(audio=types.Blob(data=pcm, mime_type="audio/pcm;rate=16000"))


async def test_activity_markers_are_refused_while_automatic_detection_is_on(live, live_client):
    async def script(conn: LiveConnection) -> None:
        await conn.complete_setup()
        await conn.closed.wait()

    live.script = script
    with pytest.raises((errors.APIError, ConnectionClosed)) as failed:
        async with live_client.aio.live.connect(model=MODEL, config=setup(live, disabled=False)) as session:
            await session.send_realtime_input(activity_start=types.ActivityStart())
            async for _ in session.receive():
                pass
    assert close_code(failed.value) == 1007
    assert "automatic activity detection is disabled" in str(failed.value)


async def test_with_detection_off_the_turn_is_the_audio_between_the_markers(live, live_client):
    heard: list[bytes] = []

    async def script(conn: LiveConnection) -> None:
        await conn.complete_setup()
        heard.append(await conn.utterance())
        await conn.reply("Yes.", tone(0.05))

    live.script = script
    async with live_client.aio.live.connect(model=MODEL, config=setup(live, disabled=True)) as session:
        await audio(session, NOISE)  # before the user's activity: not part of the turn
        await session.send_realtime_input(activity_start=types.ActivityStart())
        await audio(session, SPEECH)
        await session.send_realtime_input(activity_end=types.ActivityEnd())
        await audio(session, NOISE)
        async for message in session.receive():
            if message.server_content and message.server_content.turn_complete:
                break
    assert heard == [SPEECH]
    conn = live.connections[0]
    assert [kind for kind, _ in conn.activity] == ["start", "end"] and conn.refused is None


@pytest.mark.parametrize("handling", [None, types.ActivityHandling.NO_INTERRUPTION])
async def test_activity_start_cuts_the_answer_unless_the_setup_says_no_interruption(live, live_client, handling):
    answered: list[bool] = []
    speaking = asyncio.Event()

    async def script(conn: LiveConnection) -> None:
        await conn.complete_setup()
        speaking.set()
        answered.append(await conn.reply("a long answer " * 10, tone(2.0), paced=True))
        await conn.closed.wait()

    live.script = script
    async with live_client.aio.live.connect(model=MODEL, config=setup(live, True, handling)) as session:
        await speaking.wait()
        await asyncio.sleep(0.2)
        await audio(session, SPEECH * 3)  # loud audio alone does not cut: the service's detector is off
        await asyncio.sleep(0.2)
        await session.send_realtime_input(activity_start=types.ActivityStart())
        interrupted = False
        async for message in session.receive():
            content = message.server_content
            interrupted = interrupted or bool(content and content.interrupted)
            if content and content.turn_complete:
                break
    assert answered == [handling is not None]
    assert interrupted == (handling is None)
