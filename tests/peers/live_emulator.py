"""A local emulator of the Gemini Live API (BidiGenerateContent over TLS websockets on 127.0.0.1),
so the real google-genai SDK runs unchanged against it.

It checks what the real service checks that our code could get wrong (the path, the API key
header, a `setup` first, the audio MIME type), accepts both key casings the SDK emits
(`realtime_input` / `realtimeInput`, `turnComplete` / `turn_complete`), records every client frame
in order, and answers in the service's own wire format (camelCase JSON in binary frames).

Each test scripts the service: `emulator.script` is called once per connection with a
`LiveConnection` whose helpers send what the service sends (setupComplete, audio, transcriptions,
interrupted, turnComplete, toolCall, goAway, resumption updates, close codes) and wait for what the
client sends. `utterance()` stands in for the service's voice activity detection: it returns the
audio of one spoken utterance once it is followed by silence.

The setup is checked as the service checks it: a model it does not serve over
bidiGenerateContent is closed with 1008 and the service's words ("models/X is not found for API
version v1beta, or is not supported for bidiGenerateContent. Call ListModels ...", cut at the
123 bytes a close reason may hold, as the service cuts it), and a field the model refuses is
closed with 1007: thinking config on gemini-3.8-live, affective dialog or `proactive_audio:
false` on 3.8, a response modality other than audio on 3.8, affective dialog or proactivity on
gemini-3.1-flash-live-preview, a NON_BLOCKING function on it (its calls are synchronous only), and
a google_search tool beside function declarations on any model.
Sources: the Gemini 3.8 Live and 3.1 Flash Live model pages and the Live tools guide on
ai.google.dev, and Google Cloud's Live API capabilities page (search tools not combined with
function calling), read November 2026; the refusal wording of 1007 is ours (the pages give none).

`send_raw()` sends any frame at all (a message type the SDK does not know, broken JSON), and a
script that never calls `complete_setup()` is a service that accepted the websocket and then
stalled.

Client input follows the model family's rules (`LiveConnection._apply_rules`), from the same pages
and the SDK's HistoryConfig: on 3.1, client content is taken only as the initial history the setup
announced (`historyConfig.initialHistoryInClientContent`), until a turn_complete=true, with no
realtime input before that; any other client content is closed with 1007. On 3.8 a client turn
with turn_complete=true cuts the reply under way (`interrupted`, then turnComplete; a script's
`reply(paced=True)` is a generation that can be cut) and cancels a running BLOCKING call
(toolCallCancellation), as the migration guide from 2.5 describes. `answer_tool()` speaks a
tool's result as its declared behaviour and the response's scheduling say (NON_BLOCKING calls
default to WHEN_IDLE, per the SDK's FunctionResponseScheduling).

Service limits: a connection lives about ten minutes, with a GoAway 60 s before its end, then is
closed with 1011 "Deadline expired..." (the wording field reports quote); a resumption handle is
valid 2 hours after it was issued, after which, like an unknown handle, the setup is closed with
1007 (field reports describe 1007 for a resumption past its time; the wording is ours). Both run
on the emulator's clock, which `time_scale` speeds up and `advance()` moves on. `refuse_upgrades`
answers websocket upgrades with an HTTP status, as the service does with 429 when the quota is
exhausted. `reply(transcript="late"|"none")` and `transcribe()` send transcripts after
turnComplete or interleaved with the next turn (the API does not order them); `usage()` sends
usageMetadata, `model_audio()` several parts in one message.

`voice_detector` stands in for the service's automatic activity detection while the model speaks:
an energy detector over the incoming audio (20 ms windows over `threshold` RMS for `start_ms` in
a row) that cuts the generation under way, `interrupted` then turnComplete, as the service does
when the user talks over the model, or when the model's own voice comes back through a
microphone without echo cancellation. Each cut is timed in `barge_ins`.

`pong_delay_s` answers the client's websocket pings that much late (None: never), as field
reports of the real service describe (googleapis/python-genai#2935, google/adk-python#3067: the
SDK's websockets client, with its default 20 s ping timeout, closes the session with 1011
"keepalive ping timeout" while the service is still answering).

With automatic activity detection disabled in the setup
(`realtimeInputConfig.automaticActivityDetection.disabled`), the client marks the user's turns:
`activityStart` / `activityEnd` in realtime input. The API reference says they "can only be sent
if automatic (i.e. server-side) activity detection is disabled"
(https://ai.google.dev/api/live#bidigeneratecontentrealtimeinput): a marker on a session with
detection on is closed with 1007 (the wording is ours). With detection off, the voice detector
is off too; an activityStart cuts the generation under way unless the setup's `activityHandling`
is NO_INTERRUPTION (the default START_OF_ACTIVITY_INTERRUPTS is the barge-in), and the user's turn
is the audio between the markers (the default turn coverage, TURN_INCLUDES_ONLY_ACTIVITY):
`utterance()` then returns it at the activityEnd. `activity` records each marker with its time;
audio outside an activity, and `audioStreamEnd` (documented for sessions with detection on),
are not acted on.

Tool calls are bound to the connection that issued them: a toolResponse whose id this connection
did not issue (a call made before a reconnect) is not acted on, as field reports of the real
service describe; it is recorded in `ignored` and never reaches `expect("tool_response")`.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import datetime
import ipaddress
import json
import re
import ssl
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

import numpy as np
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed

from tests.peers.gemini_rest import CATALOGUE
from tests.peers.live_keepalive import slow_pongs

PATH = re.compile(r"/ws/google\.ai\.generativelanguage\.v1(alpha|beta)?\.GenerativeService\.BidiGenerateContent")
IN_RATE = 16_000
OUT_RATE = 24_000
LIVE_MODELS = frozenset(m for m, methods in CATALOGUE.items() if "bidiGenerateContent" in methods)
CLOSE_REASON_BYTES = 123  # the most a websocket close frame's reason holds


def close_reason(text: str) -> str:
    return text.encode()[:CLOSE_REASON_BYTES].decode(errors="ignore")


def setup_refusals(model: str, setup: dict[str, Any]) -> list[str]:
    """What the service refuses in this (snake-cased) setup for `model`."""
    generation = setup.get("generation_config") or {}
    proactivity = setup.get("proactivity")
    refused = []
    if model.startswith("gemini-3.8-live"):
        if "thinking_config" in generation and not model.startswith("gemini-3.8-live-extended-thinking"):
            refused.append("thinking_level is not supported by this model")
        if "enable_affective_dialog" in generation:
            refused.append("enable_affective_dialog is not supported by this model")
        if proactivity is not None and proactivity.get("proactive_audio") is False:
            refused.append("proactive_audio cannot be disabled for this model")
        if [str(m).upper() for m in generation.get("response_modalities") or ["AUDIO"]] != ["AUDIO"]:
            refused.append("only the AUDIO response modality is supported by this model")
    tools = setup.get("tools") or []
    if any("google_search" in t for t in tools) and any(t.get("function_declarations") for t in tools):
        # "does not support combining search tools (googleSearch) with non-search tools (function
        # calling ...) in the same setup request": the Live API capabilities page on Google Cloud
        refused.append("google_search cannot be combined with function declarations in one setup")
    if model.startswith("gemini-3.1-flash-live"):
        if "enable_affective_dialog" in generation or proactivity is not None:
            refused.append("affective dialog and proactive audio are not supported by this model")
        declarations = [d for tool in setup.get("tools") or [] for d in tool.get("function_declarations") or []]
        if any(d.get("behavior") == "NON_BLOCKING" for d in declarations):
            refused.append("NON_BLOCKING function calls are not supported by this model")
    return refused


def make_certificate(directory: Path) -> tuple[Path, Path]:
    """A self-signed certificate for IP 127.0.0.1, made now; returns (cert, key) paths."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "parla-live-emulator")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "live-cert.pem", directory / "live-key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


def snake(value: Any) -> Any:
    """Both casings in, one out: camelCase keys become snake_case, recursively."""
    if isinstance(value, dict):
        return {re.sub(r"(?<!^)(?=[A-Z])", "_", k).lower(): snake(v) for k, v in value.items()}
    if isinstance(value, list):
        return [snake(v) for v in value]
    return value


def tone(seconds: float, frequency: float = 440.0, rate: int = OUT_RATE, amplitude: int = 8000) -> bytes:
    t = np.arange(int(seconds * rate)) / rate
    return (np.sin(2 * np.pi * frequency * t) * amplitude).astype("<i2").tobytes()


def rms(pcm: bytes) -> float:
    samples = np.frombuffer(pcm, dtype="<i2").astype(np.float64)
    return float(np.sqrt(np.mean(samples**2))) if samples.size else 0.0


def family(model: str) -> str:
    """The Live model family whose rules apply: "3.8", "3.1" or "2.5"."""
    if model.startswith("gemini-3.8-live"):
        return "3.8"
    if model.startswith("gemini-3.1-flash-live"):
        return "3.1"
    return "2.5"


@dataclass
class VoiceDetector:
    """Speech is `start_ms` of 20 ms windows louder than `threshold` RMS in a row."""

    threshold: float = 300.0
    start_ms: int = 60
    _loud_ms: int = 0

    def reset(self) -> None:
        self._loud_ms = 0

    def speech_started(self, pcm: bytes) -> bool:
        window = IN_RATE * 2 // 50
        for i in range(0, len(pcm) - window + 1, window):
            self._loud_ms = self._loud_ms + 20 if rms(pcm[i : i + window]) > self.threshold else 0
            if self._loud_ms >= self.start_ms:
                self._loud_ms = 0
                return True
        return False


@dataclass
class ClientFrame:
    kind: str  # realtime_input, client_content, tool_response
    body: dict[str, Any]
    audio: bytes = b""
    received_at: float = field(default_factory=time.monotonic)
    seed: bool = False  # client content taken as the initial history (historyConfig)


class LiveConnection:
    def __init__(
        self,
        index: int,
        ws: ServerConnection,
        setup: dict[str, Any],
        on_handle: Callable[[str], None] = lambda handle: None,
        voice_detector: VoiceDetector | None = None,
    ) -> None:
        self.index = index
        self.voice_detector = voice_detector
        self.barge_ins: list[float] = []  # when the voice detector cut the model off
        self.ws = ws
        self.setup = setup
        self.model = str(setup.get("model", "")).removeprefix("models/")
        self.family = family(self.model)
        self.frames: list[ClientFrame] = []
        self.sent: list[dict[str, Any]] = []
        self.issued: set[str] = set()  # tool-call ids this connection sent
        self.pending_calls: dict[str, str] = {}  # id -> function name, not answered yet
        self.ignored: list[ClientFrame] = []  # what the service did not act on
        self.refused: str | None = None  # why this connection was closed with 1007 by the rules
        self.cut_replies = 0  # replies cut off by the client's input (3.8's turn_complete rule)
        self._on_handle = on_handle
        # 3.1 with historyConfig: client content is the initial history until turn_complete=true.
        realtime = setup.get("realtime_input_config") or {}
        self.manual_activity = bool((realtime.get("automatic_activity_detection") or {}).get("disabled"))
        self.activity_interrupts = realtime.get("activity_handling") != "NO_INTERRUPTION"
        self.activity: list[tuple[str, float]] = []  # ("start" | "end", when the marker arrived)
        self._in_activity = False
        self._activities: list[bytes] = []  # the audio of each ended activity, not yet taken
        history = (setup.get("history_config") or {}).get("initial_history_in_client_content")
        self.history_open = self.family == "3.1" and bool(history)
        self._inbox: asyncio.Queue[ClientFrame | None] = asyncio.Queue()
        self._unheard = bytearray()  # audio not yet taken by utterance()
        self._audio_changed = asyncio.Event()
        self._cut = asyncio.Event()  # the reply under way must stop
        self.idle = asyncio.Event()  # the model is not generating
        self.idle.set()
        self.closed = asyncio.Event()

    def behaviour(self, name: str) -> str:
        """A declared function's behaviour; undeclared, the family's default (NON_BLOCKING on 3.8)."""
        for tool in self.setup.get("tools") or []:
            for d in tool.get("function_declarations") or []:
                if d.get("name") == name and d.get("behavior"):
                    return str(d["behavior"])
        return "NON_BLOCKING" if self.family == "3.8" else "BLOCKING"

    # what the client sent

    @property
    def handle(self) -> str | None:
        return (self.setup.get("session_resumption") or {}).get("handle")

    @property
    def system_instruction(self) -> str:
        parts = (self.setup.get("system_instruction") or {}).get("parts") or []
        return "".join(p.get("text", "") for p in parts)

    @property
    def audio(self) -> bytes:
        """Every audio byte the client sent, in order."""
        return b"".join(f.audio for f in self.frames)

    def of_kind(self, kind: str) -> list[ClientFrame]:
        return [f for f in self.frames if f.kind == kind]

    async def _read(self) -> None:
        try:
            async for raw in self.ws:
                frame = self._parse(json.loads(raw))
                self.frames.append(frame)
                if frame.kind == "tool_response" and not self._issued_here(frame):
                    self.ignored.append(frame)
                    continue
                if not await self._apply_rules(frame):
                    break
                if frame.audio and not self.manual_activity:
                    self._unheard += frame.audio
                    self._audio_changed.set()
                    self._detect_voice(frame.audio)
                elif frame.audio and self._in_activity:
                    self._unheard += frame.audio
                await self._inbox.put(frame)
        except ConnectionClosed:
            pass
        finally:
            self.closed.set()
            await self._inbox.put(None)

    async def _apply_rules(self, frame: ClientFrame) -> bool:
        """The model family's rules on client input; False when the connection was closed for it.
        3.1 takes client content only as the initial history announced in the setup (then 1007),
        and no realtime input before that history is complete; 3.8 cuts the reply under way on a
        client turn with turn_complete=true, and cancels a running BLOCKING call on new input."""
        if frame.kind == "client_content" and self.family == "3.1":
            if not self.history_open:
                await self._refuse("client content is only accepted as the initial history (historyConfig)")
                return False
            frame.seed = True
            self.history_open = not frame.body.get("turn_complete")
        elif frame.kind == "realtime_input" and self.history_open:
            await self._refuse("realtime input before the initial history was completed with turn_complete")
            return False
        elif frame.kind == "client_content" and self.family == "3.8" and frame.body.get("turn_complete"):
            await self._new_input()
        elif frame.kind == "realtime_input" and ("activity_start" in frame.body or "activity_end" in frame.body):
            if not self.manual_activity:
                await self._refuse(
                    "activityStart and activityEnd can only be sent when automatic activity detection is disabled"
                )
                return False
            self._mark_activity("activity_start" in frame.body)
        elif frame.kind == "realtime_input" and "audio_stream_end" in frame.body and self.manual_activity:
            self.ignored.append(frame)
        elif frame.kind == "tool_response":
            for response in frame.body.get("function_responses") or []:
                self.pending_calls.pop(response.get("id"), None)
        return True

    def _mark_activity(self, start: bool) -> None:
        """The client's marker of the user's turn: a start is a barge-in (unless the setup asked
        for NO_INTERRUPTION) and opens a new turn; an end makes its audio an utterance."""
        self.activity.append(("start" if start else "end", time.monotonic()))
        if start:
            self._in_activity = True
            self._unheard.clear()
            if self.activity_interrupts and not self.idle.is_set():
                self.barge_ins.append(time.monotonic())
                self._cut.set()
        elif self._in_activity:
            self._in_activity = False
            self._activities.append(bytes(self._unheard))
            self._unheard.clear()
            self._audio_changed.set()

    def _detect_voice(self, pcm: bytes) -> None:
        """Speech while the model generates cuts it off (the service's automatic activity detection)."""
        detector = self.voice_detector
        if detector is None:
            return
        if self.idle.is_set() or self._cut.is_set():
            detector.reset()
        elif detector.speech_started(pcm):
            self.barge_ins.append(time.monotonic())
            self._cut.set()

    async def _new_input(self) -> None:
        if not self.idle.is_set():
            self._cut.set()
        blocking = [i for i, name in self.pending_calls.items() if self.behaviour(name) == "BLOCKING"]
        if blocking:
            for call_id in blocking:
                del self.pending_calls[call_id]
            await self.cancel_tool_calls(*blocking)

    async def _refuse(self, why: str) -> None:
        self.refused = why
        await self.ws.close(1007, close_reason(why))

    @staticmethod
    def _parse(message: dict[str, Any]) -> ClientFrame:
        message = snake(message)
        (kind, body), *rest = message.items()
        assert not rest and kind in ("realtime_input", "client_content", "tool_response"), message
        audio = b""
        if kind == "realtime_input" and "audio" in body:
            blob = body["audio"]
            assert blob["mime_type"] == "audio/pcm;rate=16000", blob["mime_type"]
            audio = base64.urlsafe_b64decode(blob["data"])
        return ClientFrame(kind, body, audio)

    def _issued_here(self, frame: ClientFrame) -> bool:
        return all(r.get("id") in self.issued for r in frame.body.get("function_responses") or [])

    async def expect(self, kind: str, timeout: float = 5.0) -> ClientFrame:
        """The next frame of `kind` (frames of other kinds in between are skipped but recorded)."""
        until = asyncio.get_running_loop().time() + timeout
        while True:
            async with asyncio.timeout_at(until):  # a timer per frame: see parla.kernel.tasks
                frame = await self._inbox.get()
            if frame is None:
                raise AssertionError(f"the client closed before sending {kind}")
            if frame.kind == kind:
                return frame

    async def each(self, kind: str) -> AsyncIterator[ClientFrame]:
        """Every following frame of `kind`, until the client closes."""
        while True:
            frame = await self._inbox.get()
            if frame is None:
                return
            if frame.kind == kind:
                yield frame

    async def utterance(self, threshold: float = 300.0, silence_ms: int = 300, timeout: float = 15.0) -> bytes:
        """Audio from the first block louder than `threshold` until `silence_ms` of quiet: what a
        service VAD would take as one utterance. Consumes it, so the next call waits for new speech.
        With automatic detection disabled: the audio of the next activity the client marked."""
        block = IN_RATE * 2 // 50  # 20 ms
        until = asyncio.get_running_loop().time() + timeout
        while self.manual_activity:
            if self._activities:
                return self._activities.pop(0)
            await self._more_audio(until)
        start = None
        quiet = 0
        pos = 0
        while True:
            while pos + block <= len(self._unheard):
                loud = rms(self._unheard[pos : pos + block]) > threshold
                if start is None and loud:
                    start = pos
                elif start is not None:
                    quiet = 0 if loud else quiet + 20
                    if quiet >= silence_ms:
                        speech = bytes(self._unheard[start : pos + block])
                        del self._unheard[: pos + block]
                        return speech
                pos += block
            await self._more_audio(until)

    async def _more_audio(self, until: float) -> None:
        """Until the client sends more audio, or `until` (TimeoutError); a timer per wait: see
        parla.kernel.tasks."""
        self._audio_changed.clear()
        async with asyncio.timeout_at(until):
            await self._audio_changed.wait()

    # what the service sends

    async def send(self, message: dict[str, Any]) -> None:
        self.sent.append(message)
        await self.ws.send(json.dumps(message).encode())

    async def send_raw(self, frame: bytes | str) -> None:
        """Any frame, as it is: what a newer or broken service might send."""
        await self.ws.send(frame)

    async def complete_setup(self) -> None:
        await self.send({"setupComplete": {}})

    async def content(self, **fields: Any) -> None:
        await self.send({"serverContent": fields})

    async def heard(self, text: str) -> None:
        await self.content(inputTranscription={"text": text})

    async def model_audio(self, *pcm: bytes, transcript: str | None = None) -> None:
        """Chunks of the model's voice in one message (one part each), with the transcript of
        them in the same message when given."""
        parts = [
            {"inlineData": {"mimeType": "audio/pcm;rate=24000", "data": base64.b64encode(p).decode()}} for p in pcm
        ]
        fields: dict[str, Any] = {"modelTurn": {"parts": parts}}
        if transcript is not None:
            fields["outputTranscription"] = {"text": transcript}
        await self.content(**fields)

    async def reply(
        self,
        text: str,
        audio: bytes,
        chunk_ms: int = 40,
        complete: bool = True,
        paced: bool = False,
        transcript: str = "inline",
        speed: float = 1.0,
    ) -> bool:
        """A spoken answer: audio in chunks, the transcript spread across them, then
        generationComplete and turnComplete. `paced` sends a chunk per `chunk_ms` / `speed` (a
        generation the client can cut into; the service generates faster than it is played); `transcript` "late" sends it after turnComplete, "none" not at
        all (the script sends it with `transcribe`, interleaved as it likes). False when the
        client's input cut it off: then `interrupted` and turnComplete went instead."""
        chunk = OUT_RATE * 2 * chunk_ms // 1000
        pieces = [audio[i : i + chunk] for i in range(0, len(audio), chunk)] or [b""]
        words = [" " + w for w in text.split()]
        per = max(1, -(-len(words) // len(pieces)))
        self.idle.clear()
        self._cut.clear()
        for i, piece in enumerate(pieces):
            if self._cut.is_set():
                self._cut.clear()
                self.cut_replies += 1
                await self.interrupted()
                await self.turn_complete()
                self.idle.set()
                return False
            said = "".join(words[i * per : (i + 1) * per])
            if piece:
                await self.model_audio(piece)
            if said and transcript == "inline":
                await self.content(outputTranscription={"text": said})
            if paced:
                await asyncio.sleep(chunk_ms / 1000 / speed)
        if complete:
            await self.content(generationComplete=True)
            await self.content(turnComplete=True)
            self.idle.set()
        if transcript == "late":
            await self.transcribe(text)
        return True

    async def transcribe(self, text: str) -> None:
        """The model's transcript of `text`, one fragment per word."""
        for word in text.split():
            await self.content(outputTranscription={"text": " " + word})

    async def answer_tool(self, frame: ClientFrame, text: str, audio: bytes) -> bool:
        """Speak a tool's result as the call's behaviour and the response's scheduling say: a
        BLOCKING call's result at once (the model waited for it); a NON_BLOCKING one's per its
        scheduling (WHEN_IDLE when absent, as the API documents): SILENT not at all, WHEN_IDLE
        once the reply under way is over, INTERRUPT cutting it off. True when spoken."""
        response = frame.body["function_responses"][0]
        if self.behaviour(response["name"]) == "NON_BLOCKING":
            scheduling = response.get("scheduling", "WHEN_IDLE")
            if scheduling == "SILENT":
                return False
            if scheduling == "INTERRUPT" and not self.idle.is_set():
                self._cut.set()
            await self.idle.wait()
        return await self.reply(text, audio)

    async def usage(self, prompt_tokens: int, response_tokens: int, **extra: Any) -> None:
        """usageMetadata as the service sends it (the Live API's UsageMetadata: counts, and
        per-modality details); `extra` adds fields such as cachedContentTokenCount."""
        await self.send(
            {
                "usageMetadata": {
                    "promptTokenCount": prompt_tokens,
                    "responseTokenCount": response_tokens,
                    "totalTokenCount": prompt_tokens + response_tokens + extra.get("thoughtsTokenCount", 0),
                    "promptTokensDetails": [{"modality": "AUDIO", "tokenCount": prompt_tokens}],
                    "responseTokensDetails": [{"modality": "AUDIO", "tokenCount": response_tokens}],
                    **extra,
                }
            }
        )

    async def interrupted(self) -> None:
        await self.content(interrupted=True)
        self.idle.set()

    async def turn_complete(self) -> None:
        await self.content(turnComplete=True)
        self.idle.set()

    async def resumption(self, handle: str, resumable: bool = True) -> None:
        if resumable:
            self._on_handle(handle)
        await self.send({"sessionResumptionUpdate": {"newHandle": handle, "resumable": resumable}})

    async def go_away(self, seconds: float) -> None:
        await self.send({"goAway": {"timeLeft": f"{seconds:g}s"}})

    async def tool_call(self, *calls: dict[str, Any]) -> None:
        self.issued.update(c["id"] for c in calls if "id" in c)
        self.pending_calls.update({c["id"]: c["name"] for c in calls if "id" in c})
        await self.send({"toolCall": {"functionCalls": list(calls)}})

    async def cancel_tool_calls(self, *ids: str) -> None:
        await self.send({"toolCallCancellation": {"ids": list(ids)}})

    async def close(self, code: int = 1000, reason: str = "") -> None:
        await self.ws.close(code, reason)

    async def drop(self) -> None:
        """Vanish without a close frame: the client sees 1006."""
        self.ws.transport.abort()


Script = Callable[[LiveConnection], Awaitable[None]]


def typed(frame: ClientFrame) -> str | None:
    """The text of a typed user turn in this frame, whichever way the client sent it (client
    content that asks for an answer, or realtime text); None for anything else."""
    if frame.kind == "client_content" and frame.body.get("turn_complete") and not frame.seed:
        turns = frame.body["turns"]
        return str((turns[-1] if isinstance(turns, list) else turns)["parts"][0]["text"])
    if frame.kind == "realtime_input" and "text" in frame.body:
        return str(frame.body["text"])
    return None


async def typed_turn(conn: LiveConnection, timeout: float = 5.0) -> str:
    """The next typed user turn."""
    until = asyncio.get_running_loop().time() + timeout
    while True:
        async with asyncio.timeout_at(until):  # a timer per frame: see parla.kernel.tasks
            frame = await conn._inbox.get()
        if frame is None:
            raise AssertionError("the client closed before typing a turn")
        text = typed(frame)
        if text is not None:
            return text


async def echo(conn: LiveConnection) -> None:
    """A script: a service that answers every typed turn with "You said <it>." (a short tone)."""
    await conn.complete_setup()
    await answer_typed_turns(conn)


async def resumable_echo(conn: LiveConnection) -> None:
    """`echo` that gives each connection a resumption handle, "h<index>"."""
    await conn.complete_setup()
    await conn.resumption(f"h{conn.index}")
    await answer_typed_turns(conn)


async def answer_typed_turns(conn: LiveConnection) -> None:
    while not conn.closed.is_set():
        try:
            text = await typed_turn(conn, timeout=3600)
        except AssertionError:
            return
        await conn.reply(f"You said {text}.", tone(0.05))


async def _idle(conn: LiveConnection) -> None:
    await conn.complete_setup()
    await conn.closed.wait()


HANDLE_LIFETIME_S = 2 * 3600  # resumption handles stay valid 2 h (session management guide)
CONNECTION_LIFETIME_S = 600  # a connection lasts about 10 minutes ...
GOAWAY_BEFORE_S = 60  # ... and a GoAway comes about 60 s before it ends


@dataclass
class LiveEmulator:
    """`time_scale` emulated seconds pass per real second (for the connection lifetime and the
    age of handles); `advance()` moves the emulated clock on. `refuse_upgrades` answers the next
    websocket upgrades with these HTTP statuses (429: the quota is exhausted)."""

    cert: Path
    key: Path
    api_key: str = "test-key"
    models: frozenset[str] = LIVE_MODELS
    script: Script = _idle
    time_scale: float = 1.0
    refuse_upgrades: list[int] = field(default_factory=list)
    voice_detector: VoiceDetector | None = None
    pong_delay_s: float | None = 0.0
    connections: list[LiveConnection] = field(default_factory=list)
    handles: dict[str, float] = field(default_factory=dict)  # handle -> emulated time it was issued
    upgrades_refused: list[int] = field(default_factory=list)
    setups_refused: list[str] = field(default_factory=list)  # 1007 at setup: refused fields or handles
    errors: list[BaseException] = field(default_factory=list)
    connected: asyncio.Condition = field(default_factory=asyncio.Condition)
    _server: Server | None = None
    _offset: float = 0.0

    def now(self) -> float:
        return time.monotonic() * self.time_scale + self._offset

    def advance(self, seconds: float) -> None:
        self._offset += seconds

    @property
    def url(self) -> str:
        assert self._server is not None
        port = self._server.sockets[0].getsockname()[1]
        return f"https://127.0.0.1:{port}"

    def client_ssl(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.cert))

    async def __aenter__(self) -> Self:
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(self.cert, self.key)
        self._server = await serve(
            self._serve,
            "127.0.0.1",
            0,
            ssl=tls,
            max_size=None,
            process_request=self._process_request,
            create_connection=slow_pongs(self.pong_delay_s) if self.pong_delay_s != 0 else None,
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    async def wait_connections(self, n: int, timeout: float = 10.0) -> LiveConnection:
        async with asyncio.timeout(timeout), self.connected:
            await self.connected.wait_for(lambda: len(self.connections) >= n)
        return self.connections[n - 1]

    def _process_request(self, ws: ServerConnection, request: Any) -> Any:
        if not self.refuse_upgrades:
            return None
        status = self.refuse_upgrades.pop(0)
        self.upgrades_refused.append(status)
        return ws.respond(status, "Resource has been exhausted (e.g. check quota).\n")

    def _handle_refusal(self, handle: str | None) -> str | None:
        if handle is None:
            return None
        issued = self.handles.get(handle)
        if issued is None:
            return "session resumption handle is not valid"
        if self.now() - issued > HANDLE_LIFETIME_S:
            return "session resumption handle has expired"
        return None

    async def _lifetime(self, conn: LiveConnection) -> None:
        """About ten minutes per connection: a GoAway 60 s before the end, then the close."""
        await asyncio.sleep((CONNECTION_LIFETIME_S - GOAWAY_BEFORE_S) / self.time_scale)
        await conn.go_away(GOAWAY_BEFORE_S / self.time_scale)
        await asyncio.sleep(GOAWAY_BEFORE_S / self.time_scale)
        await conn.close(1011, "Deadline expired before operation could complete.")

    async def _serve(self, ws: ServerConnection) -> None:
        request = ws.request
        assert request is not None
        if not PATH.fullmatch(request.path):
            await ws.close(1008, f"unknown method {request.path}")
            return
        if request.headers.get("x-goog-api-key") != self.api_key:
            await ws.close(1007, "API key not valid. Please pass a valid API key.")
            return
        first = snake(json.loads(await ws.recv()))
        if "setup" not in first:
            await ws.close(1007, "the first message must be setup")
            return
        model = str(first["setup"].get("model", "")).removeprefix("models/")
        if model not in self.models:
            version = "v1" + (PATH.fullmatch(request.path).group(1) or "")  # type: ignore[union-attr]
            await ws.close(
                1008,
                close_reason(
                    f"models/{model} is not found for API version {version}, or is not supported for "
                    "bidiGenerateContent. Call ListModels to see the list of available models and their "
                    "supported methods."
                ),
            )
            return
        refused = setup_refusals(model, first["setup"])
        handle_refused = self._handle_refusal((first["setup"].get("session_resumption") or {}).get("handle"))
        if handle_refused:
            refused.append(handle_refused)
        if refused:
            self.setups_refused.append("; ".join(refused))
            await ws.close(1007, close_reason("; ".join(refused)))
            return
        detector = dataclasses.replace(self.voice_detector) if self.voice_detector is not None else None
        conn = LiveConnection(len(self.connections), ws, first["setup"], self._issue_handle, detector)
        reader = asyncio.create_task(conn._read())
        lifetime = asyncio.create_task(self._lifetime(conn))
        async with self.connected:
            self.connections.append(conn)
            self.connected.notify_all()
        try:
            await self.script(conn)
        except ConnectionClosed:
            pass
        except BaseException as e:  # noqa: BLE001 - a failed scripted assertion: report it to the test
            self.errors.append(e)
            await ws.close(1011, f"emulator script failed: {e!r}"[:120])
        finally:
            reader.cancel()
            lifetime.cancel()

    def _issue_handle(self, handle: str) -> None:
        self.handles[handle] = self.now()
