"""An item of the turn corpus replayed as it happens on a laptop: the answer plays on the speaker
until the detector pauses it (then the room stops echoing it, only its reverberation dies away),
resumes where it paused when the detector releases it, and stops when the user takes the floor.
The microphone (the user's sound plus the echo of what was really played) goes through Parla's
echo canceller 10 ms at a time, with what was played as its reference, and, given a `NearEnd`,
each 10 ms is judged by it as voice.audio.echo.EchoCanceller does.

Without this, a detector that pauses the answer would be judged on a signal where the answer
never paused, and the canceller's double-talk suppression would keep eating the user's words
that, on the laptop, arrive after the speaker went quiet.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from scipy.signal import fftconvolve

from parla.voice.audio.echo import Cancelled, WebRtcEngine
from parla.voice.audio.near_end import NearEnd
from tests.peers.turn_corpus import RATE, Item, distorted

STEP = RATE // 100  # the canceller's 10 ms frame
# A pause or a cut decided now is heard this much later: the speaker's device buffer (50 ms in
# voice.audio.devices.Speaker).
SPEAKER_LAG_S = 0.05


class AnswerInRoom:
    def __init__(self, item: Item, lag_s: float = SPEAKER_LAG_S, near_end: NearEnd | None = None) -> None:
        if item.user is None or item.answer is None or item.echo_path is None:
            raise ValueError(f"{item.label}: not an item over an answer")
        self.user, self.answer, self.path = item.user, item.answer, item.echo_path
        self.drive = item.drive
        self.lag = round(lag_s * RATE)
        n = len(self.user)
        self.played = np.zeros(n + STEP)
        self.echo = np.zeros(n + STEP)
        self.t = 0  # samples of microphone signal handed out
        self._segment: tuple[int, int] | None = None  # (timeline sample, answer sample) it plays from
        self._events: list[tuple[int, bool]] = []  # (from sample, play or not), in order
        self._engine = WebRtcEngine()
        self.near_end = near_end
        self._paused_at = 0  # the answer's sample where it was last paused
        self.cut = False
        self._play(0, 0)

    @property
    def model_speaking(self) -> bool:
        """The answer is under way (paused or not): not yet played to its end nor cut."""
        if self.cut:
            return False
        return (self._position(self.t) if self._segment else self._paused_at) < len(self.answer)

    def heard_share(self) -> float:
        """The share of the answer played so far."""
        at = self._position(self.t) if self._segment else self._paused_at
        return min(at, len(self.answer)) / len(self.answer)

    def pause(self) -> None:
        self._events.append((self.t + self.lag, False))

    def resume(self) -> None:
        self._events.append((self.t + self.lag, True))

    def stop(self) -> None:
        self.cut = True
        self._events.append((self.t + self.lag, False))

    def blocks(self) -> Iterator[bytes]:
        """The cancelled microphone signal (int16), 10 ms at a time, to the item's end."""
        while self.t + STEP <= len(self.user):
            yield self._step()

    def _step(self) -> bytes:
        t = self.t
        while self._events and self._events[0][0] <= t:
            at, play = self._events.pop(0)
            if play and self._segment is None and not self.cut:
                self._play(at, self._paused_at)
            elif not play and self._segment is not None:
                self._quiet(at)
        near = np.clip(self.user[t : t + STEP] + self.echo[t : t + STEP], -32768, 32767).astype("<i2")
        far16 = self.played[t : t + STEP + 1]
        far24 = np.interp(np.arange(STEP * 3 // 2) / 1.5, np.arange(len(far16)), far16)
        out = self._engine.process(near.tobytes(), np.clip(far24, -32768, 32767).astype("<i2").tobytes())
        self.t += STEP
        if self.near_end is None:
            return out
        judged = self.near_end.process(near.astype(float), far16[:STEP])
        if not self.near_end.ready:
            return out
        block = Cancelled(out)
        block.near_end_db = (judged,)
        block.near_end_level_db = (self.near_end.level_db,)
        return block

    def _position(self, t: int) -> int:
        assert self._segment is not None
        start, pos = self._segment
        return pos + t - start

    def _play(self, at: int, pos: int) -> None:
        """The answer from its sample `pos` on, heard from timeline sample `at`."""
        self._segment = (at, pos)
        self._add(at, pos, +1)

    def _quiet(self, at: int) -> None:
        self._paused_at = min(self._position(at), len(self.answer))
        self._add(at, self._paused_at, -1)
        self._segment = None

    def _add(self, at: int, pos: int, sign: int) -> None:
        """Add (or take away) the answer from `pos` played from `at`, and its echo: the room is
        linear (a distorting speaker's clipping has no memory), so stopping it at `at` takes away
        the echo of what would have followed."""
        rest = self.answer[pos:][: len(self.played) - at]
        if not len(rest):
            return
        self.played[at : at + len(rest)] += sign * rest
        echo = fftconvolve(distorted(rest, self.drive), self.path)[: len(self.echo) - at]
        self.echo[at : at + len(echo)] += sign * echo
