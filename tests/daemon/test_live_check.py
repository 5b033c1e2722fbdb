"""`parla doctor --live` against the Live emulator standing in for the service: every step passes
and the trace holds what the emulator itself recorded, both ways; the trace replayed by the
emulator gives the same steps; a refused resumption fails its step with the close code."""

from __future__ import annotations

import asyncio
import io
import json
import wave

import pytest
from typer.testing import CliRunner

from parla.daemon.cli import app
from parla.daemon.live_check import PROBE, live_check, without_audio
from parla.daemon.memory_services import gemini_client
from parla.daemon.settings import Settings
from tests.peers.live_emulator import LiveConnection, VoiceDetector, tone, typed_turn
from tests.peers.live_replay import read_trace, replay
from tests.peers.pulse import speech

pytestmark = pytest.mark.tier("fast")

STEPS = ["setup", "spoken turn", "tool call", "interruption", "resumption"]


async def service(conn: LiveConnection) -> None:
    """The service as the check expects it: a handle, an answer to speech, a tool call, a long
    answer its voice detection cuts when the user talks over it."""
    await conn.complete_setup()
    if conn.index > 0:
        await conn.closed.wait()
        return
    await conn.resumption("h0")
    await conn.utterance()
    await conn.reply("Hello there.", tone(0.2))
    await typed_turn(conn)
    await conn.tool_call({"id": "p1", "name": PROBE, "args": {}})
    await conn.expect("tool_response")
    await conn.reply("It returned 42.", tone(0.2))
    await typed_turn(conn)
    await conn.reply("One. Two. Three. Four. Five.", tone(4.0), paced=True)
    await conn.closed.wait()


def settings_for(live, gemini, monkeypatch, live_certificate) -> Settings:
    monkeypatch.setenv("SSL_CERT_FILE", str(live_certificate[0]))
    return Settings(gemini_api_key=live.api_key, gemini_base_url=gemini.base_url, live_url=live.url)


async def check(settings: Settings) -> tuple[list, str]:
    out = io.StringIO()
    steps = await live_check(settings, gemini_client(settings), speech("what time is it"), out, pace=0.25)
    return steps, out.getvalue()


async def test_every_step_passes_and_the_trace_matches_the_emulators_records(
    live, gemini, monkeypatch, live_certificate, tmp_path
):
    live.script = service
    live.voice_detector = VoiceDetector()
    steps, text = await check(settings_for(live, gemini, monkeypatch, live_certificate))
    assert [(s.name, s.ok) for s in steps] == [(name, True) for name in STEPS], steps
    assert "after the end of the speech" in steps[1].detail and "interrupted" in steps[3].detail

    header, *lines = [json.loads(line) for line in text.splitlines()]
    assert header["format"] == "parla-live-trace" and header["version"] == 1
    first = live.connections[0]
    received = [line["msg"] for line in lines if line["conn"] == 0 and line["dir"] == "in"]
    assert received == [without_audio(m) for m in first.sent]  # setupComplete included, in order
    sent = [line["msg"] for line in lines if line["conn"] == 0 and line["dir"] == "out"][1:]  # after the setup
    assert len(sent) == len(first.frames)
    assert sum(m["realtimeInput"]["audio"]["bytes"] for m in sent if "audio" in m.get("realtimeInput", {})) == len(
        first.audio
    )
    assert live.connections[1].handle == "h0"
    closes = [line["msg"] for line in lines if line["dir"] == "close"]
    assert closes == [{"code": 1000, "reason": "closed by the check", "by": "client"}]

    # The trace replayed by the emulator: the same steps pass, the same messages come back.
    path = tmp_path / "trace.jsonl"
    path.write_text(text)
    live.script = replay(path)
    live.voice_detector = None
    live.connections.clear()
    again, replayed = await check(settings_for(live, gemini, monkeypatch, live_certificate))
    assert [(s.name, s.ok) for s in again] == [(name, True) for name in STEPS], again
    (tmp_path / "replayed.jsonl").write_text(replayed)
    _, replayed_lines = read_trace(tmp_path / "replayed.jsonl")
    assert [m["msg"] for m in replayed_lines if m["dir"] == "in"] == [m["msg"] for m in lines if m["dir"] == "in"]


async def test_a_refused_resumption_fails_its_step_with_the_close_code(live, gemini, monkeypatch, live_certificate):
    async def forgetful(conn: LiveConnection) -> None:
        await service(conn)
        live.handles.clear()  # the service lost the session: its handle is refused (1007)

    live.script = forgetful
    live.voice_detector = VoiceDetector()
    steps, text = await check(settings_for(live, gemini, monkeypatch, live_certificate))
    assert [s.ok for s in steps] == [True, True, True, True, False]
    assert "1007" in steps[-1].detail and "not valid" in steps[-1].detail
    last = json.loads(text.splitlines()[-1])
    assert last["conn"] == 1 and last["dir"] == "close" and last["msg"]["code"] == 1007


def test_the_command_needs_a_speech_file_of_the_right_kind(tmp_path, monkeypatch):
    monkeypatch.setenv("PARLA_CONFIG_FILE", str(tmp_path / "none.toml"))
    monkeypatch.setenv("GEMINI_API_KEY", "k")
    result = CliRunner().invoke(app, ["doctor", "--live"])
    assert result.exit_code == 1 and "--live needs --speech" in result.stderr
    stereo = tmp_path / "stereo.wav"
    with wave.open(str(stereo), "wb") as w:
        w.setnchannels(2)
        w.setsampwidth(2)
        w.setframerate(44100)
        w.writeframes(bytes(400))
    result = CliRunner().invoke(app, ["doctor", "--live", "--speech", str(stereo)])
    assert result.exit_code == 1 and "16 kHz mono 16-bit" in result.stderr and "ffmpeg" in result.stderr


async def test_the_command_runs_the_check_and_writes_the_trace(live, gemini, live_certificate, tmp_path, monkeypatch):
    live.script = service
    live.voice_detector = VoiceDetector()
    question = tmp_path / "question.wav"
    with wave.open(str(question), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(speech("what time is it"))
    trace = tmp_path / "trace.jsonl"
    env = {
        "PARLA_CONFIG_FILE": str(tmp_path / "none.toml"),
        "GEMINI_API_KEY": live.api_key,
        "PARLA_GEMINI_BASE_URL": gemini.base_url,
        "PARLA_LIVE_URL": live.url,
        "SSL_CERT_FILE": str(live_certificate[0]),
    }
    args = ["doctor", "--live", "--speech", str(question), "--trace", str(trace), "--json"]
    result = await asyncio.to_thread(CliRunner().invoke, app, args, env=env)
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert [s["name"] for s in answer["steps"] if s["ok"]] == STEPS and answer["trace"] == str(trace)
    header, lines = read_trace(trace)
    assert header["model"] == live.connections[0].model and lines
