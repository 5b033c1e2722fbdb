"""Microphone capture and speaker playback through sounddevice callback streams.

The PortAudio callbacks run on their own threads and never wait on the event loop: capture hands
each block to the loop with `call_soon_threadsafe` into a bounded queue (when the network stalls
the oldest blocks are dropped and counted, so memory stays flat); playback pulls from a locked
byte buffer and plays silence when it runs dry. `Speaker.flush` empties the buffer and aborts the
stream, which discards what PortAudio and the sound server still hold: measured here, the speaker
falls silent within a few ms instead of one buffer later (≈ 40-60 ms with 20 ms blocks).

sounddevice is imported on first use, not at import time: PortAudio reads the sound server's
configuration once, when it loads, and the CLI's offline commands should not need it at all.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Literal, Self

import numpy as np

from ..config import MIC_RATE, SAMPLE_BYTES, SPEAKER_RATE
from ..errors import AudioDeviceError
from .alsa import route_alsa_messages
from .echo import EchoCanceller, PlayedAudio

log = logging.getLogger(__name__)

Kind = Literal["input", "output"]

_SETTLE_S = 0.3


def _sounddevice() -> ModuleType:
    try:
        import sounddevice
    except OSError as e:  # PortAudio itself is missing
        raise AudioDeviceError(
            f"audio is unavailable: {e}. Install PortAudio (Debian/Ubuntu: `apt install libportaudio2`, "
            "macOS: `brew install portaudio`)"
        ) from None
    route_alsa_messages()  # an underrun is a counted warning of the log, not a line on stderr
    return sounddevice


@dataclass(frozen=True)
class Device:
    index: int
    name: str
    inputs: int
    outputs: int
    default_rate: float

    def channels(self, kind: Kind) -> int:
        return self.inputs if kind == "input" else self.outputs


def list_devices() -> list[Device]:
    sd = _sounddevice()
    return [
        Device(
            int(d["index"]),
            str(d["name"]),
            int(d["max_input_channels"]),
            int(d["max_output_channels"]),
            float(d["default_samplerate"]),
        )
        for d in sd.query_devices()
    ]


def describe_devices(devices: list[Device]) -> str:
    if not devices:
        return "no audio devices exist (is a sound server running?)"
    return "; ".join(f"[{d.index}] {d.name} ({d.inputs} in, {d.outputs} out)" for d in devices)


def resolve_device(spec: str | int | None, kind: Kind) -> int | None:
    """The device index for a name (case-insensitive, a unique part of it is enough) or an index;
    None means the system default, which must exist."""
    devices = list_devices()
    usable = [d for d in devices if d.channels(kind) > 0]
    setting = "PARLA_INPUT_DEVICE" if kind == "input" else "PARLA_OUTPUT_DEVICE"

    def fail(problem: str) -> AudioDeviceError:
        return AudioDeviceError(f"{problem}. Devices: {describe_devices(devices)}. Set {setting} to a name or index")

    if spec is None or spec == "":
        sd = _sounddevice()
        default = sd.default.device[0 if kind == "input" else 1]
        if default is None or default < 0 or not any(d.index == default for d in usable):
            raise fail(f"there is no default {kind} device")
        return None
    if isinstance(spec, int) or spec.strip().isdigit():
        index = int(spec)
        if not any(d.index == index for d in usable):
            raise fail(f"{setting}={spec} is not an {kind} device")
        return index
    exact = [d for d in usable if d.name.lower() == spec.lower()]
    matches = exact or [d for d in usable if spec.lower() in d.name.lower()]
    if len(matches) != 1:
        raise fail(f"{setting}={spec!r} matches {'no' if not matches else len(matches)} {kind} devices")
    return matches[0].index


class _AudioStream:
    """A sounddevice callback stream of 16-bit mono blocks, opened on `async with` (or `open`)."""

    kind: Kind
    rate: int
    latency: str | float = "low"

    def __init__(self, device: str | int | None, block_ms: int) -> None:
        self.device = device
        self.block_frames = self.rate * block_ms // 1000
        self._stream: Any = None
        self._settling = 0  # callbacks left whose device times are taken as they are

    def _settle(self) -> None:
        self._settling = max(1, round(_SETTLE_S * self.rate / self.block_frames))

    def _resync(self, flagged: bool) -> bool:
        """Whether this callback's device time is taken as it is rather than as the continuation
        of the stream: in the first `_SETTLE_S` of a stream (PortAudio's first DAC times leave out
        the output latency, measured here as about 60 ms) and after an underrun or overflow."""
        if self._settling > 0:
            self._settling -= 1
            return True
        return flagged

    @property
    def is_open(self) -> bool:
        return self._stream is not None

    def open(self, block_ms: int | None = None) -> None:
        """Start the stream (with blocks of `block_ms`, if given); an open stream with other
        blocks is reopened, one with the same blocks is left alone."""
        frames = self.block_frames if block_ms is None else self.rate * block_ms // 1000
        if self._stream is not None:
            if frames == self.block_frames:
                return
            self.close()
        self.block_frames = frames
        self._settle()
        sd = _sounddevice()
        stream_type = sd.RawInputStream if self.kind == "input" else sd.RawOutputStream
        stream = stream_type(
            samplerate=self.rate,
            channels=1,
            dtype="int16",
            blocksize=self.block_frames,
            device=resolve_device(self.device, self.kind),
            latency=self.latency,
            callback=self._callback,
        )
        stream.start()
        self._stream = stream

    def close(self) -> None:
        stream, self._stream = self._stream, None
        if stream is not None:
            stream.abort()
            stream.close()

    async def __aenter__(self) -> Self:
        self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    def _callback(self, data: Any, frames: int, when: Any, status: Any) -> None:
        raise NotImplementedError


class Microphone(_AudioStream):
    """16 kHz mono int16 capture in blocks of `block_ms`, held in a queue of at most `queue_ms`,
    with the speaker's echo removed from each block when an `echo` canceller is given. Closing
    the stream drops what was captured and not yet read: a reopened microphone starts fresh."""

    kind = "input"
    rate = MIC_RATE

    def __init__(
        self,
        device: str | int | None = None,
        block_ms: int = 20,
        queue_ms: int = 2000,
        echo: EchoCanceller | None = None,
    ) -> None:
        super().__init__(device, block_ms)
        self._queue: asyncio.Queue[bytes] = asyncio.Queue(maxsize=max(1, queue_ms // block_ms))
        self._loop: asyncio.AbstractEventLoop | None = None
        self.echo = echo
        self.captured = 0
        self.dropped = 0
        self._generation = 0  # blocks of a stream closed since are not queued

    def open(self, block_ms: int | None = None) -> None:
        self._loop = asyncio.get_running_loop()
        super().open(block_ms)

    def close(self) -> None:
        super().close()
        self._generation += 1
        while not self._queue.empty():
            self._queue.get_nowait()

    def _callback(self, data: Any, frames: int, when: Any, status: Any) -> None:
        assert self._loop is not None
        block = bytes(data)
        if self.echo is not None:
            try:
                block = self.echo.process(block, when.inputBufferAdcTime, self._resync(bool(status.input_overflow)))
            except Exception:  # an exception here would stop the stream: the user would go unheard
                log.exception("echo cancellation failed; the microphone goes on without it")
                self.echo = None
        self._loop.call_soon_threadsafe(self._offer, block, self._generation)

    def _offer(self, block: bytes, generation: int) -> None:
        if generation != self._generation:
            return
        self.captured += 1
        if self._queue.full():
            self._queue.get_nowait()
            self.dropped += 1
        self._queue.put_nowait(block)

    async def read(self) -> bytes:
        return await self._queue.get()


class Speaker(_AudioStream):
    """24 kHz mono int16 playback. `play` never blocks; `flush` silences at once and reports how
    much of what was queued was never played, which is how a cut-off reply's spoken part is known."""

    kind = "output"
    rate = SPEAKER_RATE
    # A little more device buffer than capture's "low": a late callback on a busy machine then
    # underruns less often (a gap in the sound is a jump the echo canceller must find again),
    # and a barge-in still silences at once, since `flush` aborts the stream with what it held.
    latency = 0.05

    def __init__(
        self,
        device: str | int | None = None,
        block_ms: int = 20,
        buffer_s: float = 300.0,
        reference: PlayedAudio | None = None,
    ) -> None:
        super().__init__(device, block_ms)
        self.reference = reference
        self.max_bytes = int(buffer_s * SPEAKER_RATE) * SAMPLE_BYTES
        self._buffer = bytearray()
        self._lock = threading.Lock()
        self._idle = threading.Event()
        self._idle.set()
        self.played_bytes = 0
        self.dropped_bytes = 0
        self._paused = False

    def _callback(self, data: Any, frames: int, when: Any, status: Any) -> None:
        n = len(data)
        with self._lock:
            chunk = b"" if self._paused else bytes(self._buffer[:n])
            del self._buffer[: len(chunk)]
            self.played_bytes += len(chunk)
            if not self._buffer:
                self._idle.set()
        data[: len(chunk)] = chunk
        if len(chunk) < n:
            data[len(chunk) :] = bytes(n - len(chunk))
        if self.reference is not None:
            self.reference.played(bytes(data), when.outputBufferDacTime, self._resync(bool(status.output_underflow)))

    def play(self, pcm: bytes) -> None:
        with self._lock:
            room = max(self.max_bytes - len(self._buffer), 0)
            if len(pcm) > room:
                self.dropped_bytes += len(pcm) - room
                pcm = pcm[:room]
            self._buffer += pcm
            if self._buffer:
                self._idle.clear()

    def overlay(self, pcm: bytes) -> None:
        """Mix `pcm` into what plays next (clipped), so it is heard within the device's latency even
        while a reply plays; past the queued audio it plays alone."""
        with self._lock:
            head = min(len(self._buffer), len(pcm)) // SAMPLE_BYTES * SAMPLE_BYTES
            if head:
                mixed = np.frombuffer(self._buffer[:head], "<i2").astype(np.int32)
                mixed += np.frombuffer(pcm[:head], "<i2")
                self._buffer[:head] = np.clip(mixed, -32768, 32767).astype("<i2").tobytes()
            self._buffer += pcm[head:]
            if self._buffer:
                self._idle.clear()

    def ahead_s(self) -> float:
        """Seconds before a sound queued now is heard: what the buffer holds, then the device's latency."""
        with self._lock:
            queued = len(self._buffer) / (SPEAKER_RATE * SAMPLE_BYTES)
        stream = self._stream
        device = float(stream.latency) if stream is not None else float(self.latency)
        return queued + device

    def queued(self) -> bool:
        """Audio is waiting to play (paused or not)."""
        with self._lock:
            return bool(self._buffer)

    def pause(self) -> None:
        """Play silence and keep what is queued (a sound over the answer that may be a barge-in);
        what the device already holds, one device buffer, still plays."""
        with self._lock:
            self._paused = True

    def resume(self) -> None:
        """Go on from where `pause` stopped."""
        with self._lock:
            self._paused = False

    def flush(self) -> int:
        """Silence now: drop the queued audio and what the device still holds. Returns the bytes
        that were queued but never reached the device."""
        with self._lock:
            discarded = len(self._buffer)
            self._buffer.clear()
            self._paused = False
            self._idle.set()
        stream = self._stream
        if stream is not None and discarded:
            if self.reference is not None:
                self.reference.discard_after(stream.time)
            stream.abort()
            self._settle()
            stream.start()
        return discarded

    async def drained(self, timeout: float | None = None) -> bool:
        """Wait until everything queued has been handed to the device."""
        return await asyncio.to_thread(self._idle.wait, timeout)
