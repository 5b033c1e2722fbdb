"""Acoustic echo cancellation on the microphone path, so the model does not hear its own voice
from the loudspeakers and take it for the user.

The reference is what the speaker actually rendered, not what was queued: the playback callback
records every block it hands to the device with PortAudio's DAC time (when its first sample is
heard), and the capture callback takes, for each microphone block, the reference rendered at the
block's ADC time. Both times come from the same PortAudio clock, so the canceller only has to find
the acoustic delay of the room (its own delay estimator does), not the buffering of two streams.
Audio that a flush discarded before the device played it is taken out of the reference again.

Each captured block is processed in the capture callback, in 10 ms frames, and handed on at once:
cancellation never holds a block back. While nothing has been played for `_HOLD_S` the block
passes through untouched (nothing to cancel, and no CPU spent on silence).

The engine is WebRTC's AEC3 from the `pywebrtc-audio` wheel (Apache-2.0, numpy only, no model
download); `python -m bench.echo` compares it with livekit's AudioProcessingModule in the test
room (the same ERLE there, but livekit adds about 20 MB of resident memory and protobuf).
"""

from __future__ import annotations

import threading
import time
from typing import Any, Protocol

import numpy as np

from ..config import MIC_RATE, SAMPLE_BYTES, SPEAKER_RATE
from .near_end import NearEnd

FRAME_S = 0.01  # the WebRTC audio processing module takes 10 ms frames
# After playback stops its echo still rings in the room for a moment: keep cancelling this long.
_HOLD_S = 1.0
# PortAudio's DAC and ADC times jitter between callbacks (measured on PulseAudio: +-8 ms on
# capture, callbacks arriving in bursts), while the sample clock does not: within this much of
# where the stream should be it is taken as continuous, and the reference is not moved (each jump
# of a few ms would make the canceller search for the echo again). A restart (a flush, a reopened
# stream) or an underrun/overflow PortAudio reports moves it.
_CONTINUOUS_S = 0.04
# On capture the reported ADC time can also creep away from the sample clock while the blocks
# keep arriving on time (PulseAudio with a second recorder on the source: 0.25 ms a block). A
# creep is not followed, or the reference would jump each time it passed the tolerance; a step
# between two blocks beyond the tolerance is (samples lost without an overflow reported), and so
# is a creep past `_CREEP_LIMIT_S`, where the sample clock can no longer be the better guess.
_CREEP_LIMIT_S = 0.25


# Where each 16 kHz sample of a 10 ms frame falls among the 24 kHz samples played.
_AT_MIC_RATE = np.arange(int(MIC_RATE * FRAME_S)) * (SPEAKER_RATE / MIC_RATE)


class PlayedAudio:
    """What the speaker rendered over the last `keep_s` seconds, with when it was heard. Written by
    the playback callback, read by the capture callback (their own threads), hence the lock."""

    def __init__(self, rate: int = SPEAKER_RATE, keep_s: float = 1.0) -> None:
        self.rate = rate
        self._capacity = int(rate * keep_s)
        self._samples = np.zeros(0, dtype=np.int16)
        self._end: float | None = None  # DAC time just after the last sample held
        self._sound_until = float("-inf")  # DAC time at which the last non-silent block ended
        self._lock = threading.Lock()

    def played(self, pcm: bytes, dac_time: float, resync: bool = False) -> None:
        """`pcm` reached the device to be heard from `dac_time`; `resync` when PortAudio reported
        an underrun (the time is then taken as it is, not as the continuation of the stream)."""
        block = np.frombuffer(pcm, dtype="<i2")
        with self._lock:
            held, end = self._samples, self._end
            tolerance = 0.0 if resync else _CONTINUOUS_S
            if end is None:
                end = dac_time
            elif dac_time - end > tolerance:  # the stream paused or restarted later: silence between
                held = np.concatenate(
                    [held, np.zeros(min(round((dac_time - end) * self.rate), self._capacity), np.int16)]
                )
                end = dac_time
            elif dac_time - end < -tolerance:  # restarted earlier than the end held: that part never played
                held = held[: max(len(held) - round((end - dac_time) * self.rate), 0)]
                end = dac_time
            self._samples = np.concatenate([held, block])[-self._capacity :]
            self._end = end + len(block) / self.rate
            if block.any():
                self._sound_until = self._end

    def discard_after(self, when: float) -> None:
        """A flush aborted the stream at `when`: what was handed over for later was never heard."""
        with self._lock:
            if self._end is not None and when < self._end:
                self._samples = self._samples[: max(len(self._samples) - round((self._end - when) * self.rate), 0)]
                self._end = when
                self._sound_until = min(self._sound_until, when)

    def sounding(self, when: float) -> bool:
        """Whether the speaker played something within `_HOLD_S` before `when`."""
        with self._lock:
            return when - self._sound_until < _HOLD_S

    def window(self, start: float, frames: int) -> np.ndarray:
        """The `frames` samples rendered from `start` on; silence where nothing was rendered."""
        out = np.zeros(frames, dtype=np.int16)
        with self._lock:
            if self._end is None:
                return out
            first = len(self._samples) - round((self._end - start) * self.rate)
            lo, hi = max(first, 0), min(first + frames, len(self._samples))
            if hi > lo:
                out[lo - first : hi - first] = self._samples[lo:hi]
        return out


class EchoEngine(Protocol):
    """One 10 ms step of a canceller: the near-end frame (16 kHz) with the far-end frame rendered
    at the same moment (24 kHz); returns the near-end frame with the echo removed."""

    def process(self, near: bytes, far: bytes) -> bytes: ...


class WebRtcEngine:
    """WebRTC AEC3 through pywebrtc-audio. It takes both streams at one rate, so the reference is
    brought to 16 kHz (linear interpolation: the echo path itself removes what that aliases); the
    stream delay is 0 because the reference is already aligned in time."""

    def __init__(self) -> None:
        import pywebrtc_audio

        self._aec: Any = pywebrtc_audio.EchoCanceller(MIC_RATE, 1, 0)
        self._far_index = np.arange(int(SPEAKER_RATE * FRAME_S))

    def process(self, near: bytes, far: bytes) -> bytes:
        reference = np.interp(_AT_MIC_RATE, self._far_index, np.frombuffer(far, "<i2")).astype(np.int16)
        out: np.ndarray = self._aec.process(np.frombuffer(near, np.int16), reference)
        return out.astype("<i2").tobytes()


class Cancelled(bytes):
    """A captured block with the answer's echo removed, and for each of its 10 ms frames how far
    the microphone was above the echo expected then (`NearEnd`, in dB): whether someone talks
    over the answer, seen before the canceller's suppressor holds their first syllables back."""

    near_end_db: tuple[float, ...] = ()
    near_end_level_db: tuple[float, ...] = ()  # and how loud that was (voice.audio.near_end.power_db)


class EchoCanceller:
    """Removes what `reference` played from each captured block (called in the capture callback).
    With `near_end`, blocks processed while the speaker plays come out as `Cancelled`, each
    frame judged by it."""

    def __init__(
        self, reference: PlayedAudio, engine: EchoEngine | None = None, near_end: NearEnd | None = None
    ) -> None:
        self.reference = reference
        self.engine = engine if engine is not None else WebRtcEngine()
        self.near_end = near_end
        self.processed_blocks = 0
        self.cpu_s = 0.0  # thread CPU time spent cancelling
        self._next: float | None = None  # the ADC time the next block should have
        self._strayed = 0.0  # how far the last block's reported ADC time was from `_next`

    def _continues(self, strayed: float) -> bool:
        if abs(strayed) <= _CONTINUOUS_S:
            return True
        return abs(strayed - self._strayed) <= _CONTINUOUS_S and abs(strayed) <= _CREEP_LIMIT_S

    def process(self, block: bytes, adc_time: float, resync: bool = False) -> bytes:
        """`block` was captured from `adc_time`; `resync` when PortAudio reported an overflow."""
        if self._next is not None and not resync and self._continues(adc_time - self._next):
            self._strayed, adc_time = adc_time - self._next, self._next
        else:  # the first block, a resync, a step or a creep too far: the device's time is taken
            self._strayed = 0.0
        self._next = adc_time + len(block) / SAMPLE_BYTES / MIC_RATE
        if not self.reference.sounding(adc_time):
            return block
        started = time.thread_time()
        near_step = int(MIC_RATE * FRAME_S) * SAMPLE_BYTES
        far_frames = int(SPEAKER_RATE * FRAME_S)
        out = bytearray()
        judged: list[float] = []
        levels: list[float] = []
        for i, offset in enumerate(range(0, len(block) - near_step + 1, near_step)):
            far = self.reference.window(adc_time + i * FRAME_S, far_frames)
            near = block[offset : offset + near_step]
            out += self.engine.process(near, far.astype("<i2").tobytes())
            if self.near_end is not None:
                far16 = np.interp(_AT_MIC_RATE, np.arange(far_frames), far)
                judged.append(self.near_end.process(np.frombuffer(near, "<i2").astype(float), far16))
                levels.append(self.near_end.level_db)
        out += block[len(out) :]  # a tail shorter than a frame (block sizes are whole 10 ms frames)
        self.processed_blocks += 1
        self.cpu_s += time.thread_time() - started
        if self.near_end is None or not self.near_end.ready:
            return bytes(out)
        cancelled = Cancelled(out)
        cancelled.near_end_db = tuple(judged)
        cancelled.near_end_level_db = tuple(levels)
        return cancelled
