"""`parla doctor --live`: a short real Live session that exercises what Parla relies on, in order:
the setup, a spoken turn from a WAV file, a tool call, an interruption (the same speech played over
a long answer) and a resumption with the handle the service gave. Each step passes or fails with
its timing; every frame both ways, with its time, and every close code go to a trace file (JSON
Lines) that a user can send when something differs, and that the emulator's tests replay
(tests/peers/live_replay.py).

Trace lines: first a header `{"format": "parla-live-trace", "version": 1, "model", "sdk"}`, then
`{"t": seconds since the start, "conn": n, "dir": "out" | "in" | "close", "msg": {...}}`. "in" is
the server's message as the SDK parsed it, in the wire's camelCase; audio is replaced by
`{"bytes": n}` (the trace stays small and holds no voice). "out" names what was sent the same way
(`setup`, `realtimeInput`, `clientContent`, `toolResponse`). "close" has the code, the reason and who closed.
"""

from __future__ import annotations

import asyncio
import json
import time
import wave
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import IO, Any

from google import genai
from google.genai import types
from google.genai.live import AsyncSession

from parla.kernel.tasks import cancel_and_wait
from parla.voice.config import MIC_RATE
from parla.voice.live.close_codes import close_code, failure_reason
from parla.voice.live.profiles import profile_for
from parla.voice.live.send import send_audio, send_text
from parla.voice.live.setup import connect_config

from .errors import ConfigError, LiveCheckFailed
from .settings import Settings

TRACE_FORMAT = "parla-live-trace"
PROBE = "parla_probe"
BLOCK_S = 0.02
INSTRUCTION = (
    "This is a short automated check of the connection. Answer in one short sentence, except when "
    f"asked to count. When asked to call {PROBE}, call it, then say what it returned."
)
TOOL_REQUEST = f"Please call the {PROBE} tool now."
LONG_REQUEST = "Count slowly from one to forty, one number per breath."


@dataclass(frozen=True)
class Step:
    name: str
    ok: bool
    detail: str


@dataclass
class Trace:
    """The trace file's writer: one JSON object a line, times from the start of the check."""

    out: IO[str]
    started: float = field(default_factory=time.monotonic)

    def header(self, model: str) -> None:
        self._line({"format": TRACE_FORMAT, "version": 1, "model": model, "sdk": version("google-genai")})

    def record(self, conn: int, direction: str, msg: dict[str, Any]) -> None:
        self._line({"t": round(time.monotonic() - self.started, 4), "conn": conn, "dir": direction, "msg": msg})

    def _line(self, value: dict[str, Any]) -> None:
        self.out.write(json.dumps(value, ensure_ascii=False) + "\n")
        self.out.flush()


def without_audio(value: Any) -> Any:
    """The message with each inline audio's data replaced by its length."""
    if isinstance(value, dict):
        if "data" in value and "mimeType" in value:
            return {**value, "data": {"bytes": len(value["data"]) * 3 // 4 - value["data"][-2:].count("=")}}
        return {k: without_audio(v) for k, v in value.items()}
    if isinstance(value, list):
        return [without_audio(v) for v in value]
    return value


def read_speech(path: Path) -> bytes:
    """A WAV file's samples, which must be what the Live API takes: 16 kHz, mono, 16-bit."""
    try:
        with wave.open(str(path)) as w:
            if (w.getframerate(), w.getnchannels(), w.getsampwidth()) != (MIC_RATE, 1, 2):
                raise ConfigError(
                    f"{path} is {w.getframerate()} Hz, {w.getnchannels()} channel(s), {8 * w.getsampwidth()}-bit; "
                    "the check needs 16 kHz mono 16-bit: `ffmpeg -i IN -ar 16000 -ac 1 -sample_fmt s16 OUT.wav`"
                )
            return w.readframes(w.getnframes())
    except (OSError, wave.Error, EOFError) as e:
        raise ConfigError(f"cannot read the speech file {path}: {e}") from None


class _Connection:
    """One Live connection of the check: what it receives, in a queue, each message traced."""

    def __init__(self, index: int, session: AsyncSession, trace: Trace) -> None:
        self.index = index
        self.session = session
        self.trace = trace
        self.messages: asyncio.Queue[types.LiveServerMessage | BaseException] = asyncio.Queue()
        self.handle: str | None = None

    async def read(self) -> None:
        try:
            while True:
                async for message in self.session.receive():
                    wire = message.model_dump(by_alias=True, exclude_none=True, mode="json")
                    self.trace.record(self.index, "in", without_audio(wire))
                    update = message.session_resumption_update
                    if update is not None and update.resumable and update.new_handle:
                        self.handle = update.new_handle
                    await self.messages.put(message)
        except Exception as e:  # noqa: BLE001 - however the connection ended, it is traced with its close code
            self.trace.record(self.index, "close", {"code": close_code(e), "reason": failure_reason(e), "by": "server"})
            await self.messages.put(e)

    async def until(
        self, wanted: Callable[[types.LiveServerMessage], bool], timeout: float, what: str
    ) -> types.LiveServerMessage:
        until = asyncio.get_running_loop().time() + timeout
        try:
            while True:
                async with asyncio.timeout_at(until):  # a timer per message: see parla.kernel.tasks
                    message = await self.messages.get()
                if isinstance(message, BaseException):
                    raise LiveCheckFailed(f"the connection ended before {what} ({failure_reason(message)})")
                if wanted(message):
                    return message
        except TimeoutError:
            raise LiveCheckFailed(f"no {what} within {timeout:g} s") from None

    async def audio(self, pcm: bytes, pace: float) -> None:
        block = int(MIC_RATE * BLOCK_S) * 2
        for i in range(0, len(pcm), block):
            piece = pcm[i : i + block]
            await send_audio(self.session, piece)
            self.trace.record(self.index, "out", {"realtimeInput": {"audio": {"bytes": len(piece)}}})
            await asyncio.sleep(BLOCK_S * pace)

    async def text(self, settings: Settings, text: str) -> None:
        profile = profile_for(settings.live_model)
        await send_text(self.session, profile, text)
        if profile.typed_turns_via == "client_content":
            self.trace.record(self.index, "out", {"clientContent": {"turns": [text], "turnComplete": True}})
        else:
            self.trace.record(self.index, "out", {"realtimeInput": {"text": text}})


def _audio_in(m: types.LiveServerMessage) -> bool:
    content = m.server_content
    return bool(content and content.model_turn and any(p.inline_data for p in content.model_turn.parts or []))


def _turn_complete(m: types.LiveServerMessage) -> bool:
    return bool(m.server_content and m.server_content.turn_complete)


def _interrupted(m: types.LiveServerMessage) -> bool:
    return bool(m.server_content and m.server_content.interrupted)


async def live_check(
    settings: Settings, client: genai.Client, speech: bytes, trace_out: IO[str], pace: float = 1.0
) -> list[Step]:
    """Run the steps; a step that fails ends the check (the later ones need it). `pace` scales
    the real-time pacing of the audio sent (tests play it faster)."""
    trace = Trace(trace_out)
    trace.header(settings.live_model)
    steps: list[Step] = []
    silence = bytes(int(MIC_RATE * 1.0) * 2)  # a second of quiet after speech: the service's turn end
    probe = types.FunctionDeclaration(
        name=PROBE, description="Returns a probe value for the connection check.", parameters_json_schema={}
    )
    timeout = settings.live_setup_timeout_s
    handle: str | None = None

    async def connect(stack: AsyncExitStack, index: int, resume: str | None) -> _Connection:
        cfg = connect_config(settings, INSTRUCTION, [probe], resume)
        trace.record(index, "out", {"setup": {"model": settings.live_model, "resumptionHandle": resume}})
        try:
            async with asyncio.timeout(timeout):
                live = client.aio.live.connect(model=settings.live_model, config=cfg)
                session = await stack.enter_async_context(live)
        except Exception as e:
            trace.record(index, "close", {"code": close_code(e), "reason": failure_reason(e), "by": "server"})
            raise
        trace.record(index, "in", {"setupComplete": {}})
        conn = _Connection(index, session, trace)
        reader = asyncio.create_task(conn.read())
        stack.push_async_callback(cancel_and_wait, reader)
        return conn

    async def step(name: str, run: Callable[[], Any]) -> bool:
        started = time.monotonic()
        try:
            detail = await run()
        except Exception as e:  # noqa: BLE001 - any failure is the step's result, in words
            reason = str(e) if isinstance(e, LiveCheckFailed) else failure_reason(e)
            steps.append(Step(name, False, reason or "timed out"))
            return False
        steps.append(Step(name, True, f"{detail} ({(time.monotonic() - started) * 1000:.0f} ms in all)"))
        return True

    async with AsyncExitStack() as stack:
        conn: _Connection | None = None

        async def setup() -> str:
            nonlocal conn
            started = time.monotonic()
            conn = await connect(stack, 0, None)
            return f"setupComplete after {(time.monotonic() - started) * 1000:.0f} ms"

        async def spoken() -> str:
            assert conn is not None
            await conn.audio(speech, pace)
            spoke = time.monotonic()
            sending = asyncio.create_task(conn.audio(silence * 5, pace))
            try:
                await conn.until(_audio_in, 15, "an answer to the spoken turn")
                first = time.monotonic()
                await conn.until(_turn_complete, 30, "the end of the answer")
            finally:
                await cancel_and_wait(sending)
            return f"first answer audio {(first - spoke) * 1000:.0f} ms after the end of the speech"

        async def tool() -> str:
            assert conn is not None
            await conn.text(settings, TOOL_REQUEST)
            message = await conn.until(lambda m: m.tool_call is not None, 20, "the tool call")
            assert message.tool_call is not None
            calls = message.tool_call.function_calls or []
            responses = [
                profile_for(settings.live_model).function_response(
                    types.FunctionResponse(id=c.id, name=c.name, response={"output": "the probe value is 42"})
                )
                for c in calls
            ]
            await conn.session.send_tool_response(function_responses=responses)
            trace.record(0, "out", {"toolResponse": {"ids": [c.id for c in calls]}})
            await conn.until(_turn_complete, 30, "the answer about the tool's result")
            return f"{len(calls)} call(s) of {', '.join(sorted({c.name or '' for c in calls}))}, answered"

        async def interruption() -> str:
            assert conn is not None
            await conn.text(settings, LONG_REQUEST)
            await conn.until(_audio_in, 15, "the long answer")
            talking = time.monotonic()
            sending = asyncio.create_task(conn.audio(speech + silence, pace))
            try:
                await conn.until(_interrupted, 10 + len(speech) / (2 * MIC_RATE), "interrupted")
            finally:
                await cancel_and_wait(sending)
            return f"interrupted {(time.monotonic() - talking) * 1000:.0f} ms after the speech started"

        if not await step("setup", setup):
            return steps
        for name, run in (("spoken turn", spoken), ("tool call", tool), ("interruption", interruption)):
            if not await step(name, run):
                return steps
        assert conn is not None
        handle = conn.handle

    async def resumption() -> str:
        if handle is None:
            raise LiveCheckFailed("the service gave no resumable handle (sessionResumptionUpdate)")
        async with AsyncExitStack() as stack:
            await connect(stack, 1, handle)
        return "the session resumed with its handle"

    trace.record(0, "close", {"code": 1000, "reason": "closed by the check", "by": "client"})
    await step("resumption", resumption)
    return steps


def default_trace_path() -> Path:
    return Path.cwd() / f"parla-live-trace-{time.strftime('%Y%m%d-%H%M%S')}.jsonl"
