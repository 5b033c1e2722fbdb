"""How fast Parla answers: each turn's voice-to-voice time, from the end of the user's speech at the
microphone to the first sound of the answer at the speaker, split into Parla's part and the
service's.

The end of speech is the last microphone block louder than `speech_rms` before the answer (the
echo canceller has already taken the model's own voice out of it); the answer's first sound is
when its first audio chunk arrived plus what the speaker still had to play before it, device
buffer included. The service's part runs from that last loud block leaving on the websocket to the
answer's first chunk arriving; Parla's part is the rest (the block's way out, the sound's way
out). Typed turns have no speech and are not timed.

Within a session, the service's part is watched: when the median of its last `window` turns is
`growth_ratio` times the median of the session's first `window` turns (and at least
`GROWTH_MIN_MS` more), the log says so, once per such step.
"""

from __future__ import annotations

import datetime
import logging
import statistics
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

log = logging.getLogger(__name__)

GROWTH_MIN_MS = 200.0  # growth below this is noise to a listener, whatever the ratio
KEEP_TURNS = 1000  # turns a session or a day keeps for its percentiles


@dataclass(frozen=True)
class TurnLatency:
    parla_ms: float
    service_ms: float
    day: datetime.date = field(default_factory=datetime.date.today)

    @property
    def total_ms(self) -> float:
        return self.parla_ms + self.service_ms


def percentile(values: list[float], q: float) -> float:
    """The q-quantile (0..1) by the nearest rank: a value that was measured."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered) + 0.5) - 1))]


def summary(turns: Iterable[TurnLatency]) -> dict[str, float | int | None]:
    """p50/p95 of the whole time and of each part, in ms (None with no turn)."""
    listed = list(turns)
    out: dict[str, float | int | None] = {"turns": len(listed)}
    for name, values in (
        ("total", [t.total_ms for t in listed]),
        ("parla", [t.parla_ms for t in listed]),
        ("service", [t.service_ms for t in listed]),
    ):
        for q in (50, 95):
            out[f"{name}_p{q}_ms"] = round(percentile(values, q / 100), 1) if values else None
    return out


def one_line(session: Iterable[TurnLatency], day: Iterable[TurnLatency]) -> str:
    """The session's and the day's figures in a line ("" with no timed turn)."""
    parts = []
    for span, turns in (("session", session), ("today", day)):
        f = summary(turns)
        if f["turns"]:
            parts.append(
                f"{span} p50 {f['total_p50_ms']:.0f} / p95 {f['total_p95_ms']:.0f} ms "
                f"(Parla {f['parla_p50_ms']:.0f} / {f['parla_p95_ms']:.0f}, {f['turns']} turns)"
            )
    return "voice to voice: " + "; ".join(parts) if parts else ""


class VoiceToVoice:
    """One conversation's timings: told each microphone block sent and each answer chunk received."""

    def __init__(self, speech_rms: float, window: int = 5, growth_ratio: float = 1.5) -> None:
        self.speech_rms = speech_rms
        self.window = window
        self.growth_ratio = growth_ratio
        self.turns: deque[TurnLatency] = deque(maxlen=KEEP_TURNS)
        self._first_service: list[float] = []  # the session's first `window` service times
        self._warned_at: float | None = None  # the recent median last reported as grown
        self._spoke: tuple[float, float] | None = None  # (read, sent) of the last loud block, unanswered

    def sent(self, block: bytes, read_at: float, sent_at: float) -> None:
        """A microphone block, read from the microphone at `read_at`, left on the websocket at `sent_at`."""
        samples = np.frombuffer(block, dtype="<i2").astype(np.float32)
        if samples.size and float(np.sqrt(np.mean(samples * samples))) > self.speech_rms:
            self._spoke = (read_at, sent_at)

    @property
    def unanswered(self) -> bool:
        """Speech went out (a microphone block louder than `speech_rms`) and no answer came since."""
        return self._spoke is not None

    def answer_audio(self, received_at: float, ahead_s: float) -> TurnLatency | None:
        """An answer's audio chunk arrived at `received_at`, to be heard after `ahead_s` (what the
        speaker holds before it). Only the first chunk after the user spoke makes a turn."""
        if self._spoke is None:
            return None
        read_at, sent_at = self._spoke
        self._spoke = None
        if received_at < sent_at:  # a chunk that left the service before the speech reached it
            return None
        turn = TurnLatency(parla_ms=((sent_at - read_at) + ahead_s) * 1000, service_ms=(received_at - sent_at) * 1000)
        self.turns.append(turn)
        self._watch_growth(turn.service_ms)
        return turn

    def _watch_growth(self, service_ms: float) -> None:
        if len(self._first_service) < self.window:
            self._first_service.append(service_ms)
            return
        if len(self.turns) < 2 * self.window:
            return
        first = statistics.median(self._first_service)
        recent = statistics.median(t.service_ms for t in list(self.turns)[-self.window :])
        floor = self._warned_at if self._warned_at is not None else first
        if recent >= floor * self.growth_ratio and recent - first >= GROWTH_MIN_MS:
            self._warned_at = recent
            log.warning(
                "the Live service answers slower and slower in this session: its part of the "
                "voice-to-voice time went from %.0f ms (median of the first %d turns) to %.0f ms "
                "(the last %d); a new session starts fresh",
                first,
                self.window,
                recent,
                self.window,
                extra={"event": "live_latency_growing", "first_ms": first, "recent_ms": recent},
            )


class LatencyDay:
    """The day's timings across sessions (today's local date only)."""

    def __init__(self) -> None:
        self._turns: deque[TurnLatency] = deque(maxlen=KEEP_TURNS)

    def add(self, turns: Iterable[TurnLatency]) -> None:
        self._turns.extend(turns)

    def today(self, current: Iterable[TurnLatency] = ()) -> list[TurnLatency]:
        day = datetime.date.today()
        return [t for t in (*self._turns, *current) if t.day == day]
