"""How much of the microphone is not the answer's echo, judged before the echo canceller's
suppressor has a say.

WebRTC's AEC3 removes the echo in two stages: a linear filter, then a nonlinear suppressor that,
while the far end talks, also holds back the user's first syllables (double-talk suppression):
through a reverberant room the user's "stop" comes out of it 15 dB down or not at all. The
engine does not expose its linear stage, so this module runs one of its own beside it, for
judging only (what is sent is still AEC3's output): a partitioned-block frequency-domain adaptive
filter (overlap-save, 10 ms blocks, `tail_ms` of echo path), normalised per bin by the far end's
energy over the filter's length. `process` returns, per 10 ms frame, the residual's power over the
residual echo it expects (the filter's echo estimate scaled by the residual-to-estimate ratio learnt
while nobody else talks), in dB: about 0 for echo alone, well above it when someone talks over the
answer.

Two filters, as in Speex's and WebRTC's cancellers: a background one adapts on every frame the
far end plays, and the foreground one, which judges, takes its weights only while they cancel
better and nobody else is heard; a background filter that double talk sent astray starts again
from the foreground. So the judge learns the room while the answer plays without its own judgement
deciding when it may learn (gating the one filter by its own residual deadlocked it: a filter not
yet good enough was frozen for good). It is `ready` once `warm_s` of played sound has passed and
the foreground has learnt an echo path.
"""

from __future__ import annotations

import numpy as np

from ..config import MIC_RATE, VoiceConfig

BLOCK = MIC_RATE // 100  # 10 ms
# The residual's floor: quieter than this is silence whatever the echo (about -56 dBFS).
_FLOOR_POWER = 50.0**2
# An echo estimate this many times the microphone's power is a diverged filter.
_DIVERGED = 4.0
# The filters' residuals are compared smoothed over about 50 ms of played sound; the background's
# weights go to the foreground when its residual is this much lower (1.5 dB), and are dropped
# when it is this much higher (9 dB: double talk sent it astray).
_SMOOTH = 0.8
_BETTER = 0.7
_ASTRAY = 8.0
_ALONE_FRAMES = 5  # frames of echo alone in a row before the foreground may take new weights


def power_db(power: float) -> float:
    """A mean square of int16 samples in dB (full scale, a square wave, is about 90 dB)."""
    return 10 * float(np.log10(max(power, 1.0)))


class NearEnd:
    def __init__(
        self,
        tail_ms: int,
        step: float,
        adapt_below_db: float,
        warm_s: float,
        decay_db_per_s: float,
    ) -> None:
        self.partitions = max(1, tail_ms * MIC_RATE // 1000 // BLOCK)
        bins = BLOCK + 1
        self._far = np.zeros((self.partitions, bins), complex)  # the far end's recent block spectra
        self._foreground = np.zeros((self.partitions, bins), complex)  # judges
        self._background = np.zeros((self.partitions, bins), complex)  # learns
        self._previous = np.zeros(BLOCK)
        self._step = step
        self._adapt_below = 10 ** (adapt_below_db / 10)
        self._leak = 1.0  # residual echo over the filter's estimate; learnt while the far end talks alone
        self._envelope = 0.0  # the echo estimate's power, falling no faster than the room's reverberation
        self._decay = 10 ** (-decay_db_per_s / 100 / 10)
        self._warm = round(warm_s * 100)  # 10 ms frames of played sound left before the ratio is trusted
        self._learnt = False  # the foreground has taken the background's weights at least once
        self._fg_residual = 0.0  # each filter's residual power, smoothed over the last frames played
        self._bg_residual = 0.0
        self._quiet = 0  # frames in a row judged as echo alone
        self.level_db = 0.0  # the last frame's residual power (what is not the answer's echo), in dB of int16 units

    @classmethod
    def of(cls, config: VoiceConfig) -> NearEnd:
        return cls(
            config.floor_near_end_tail_ms,
            config.floor_near_end_step,
            config.floor_near_end_adapt_below_db,
            config.floor_near_end_warm_s,
            config.floor_near_end_decay_db_per_s,
        )

    @property
    def ready(self) -> bool:
        return self._warm <= 0 and self._learnt

    def process(self, near: np.ndarray, far: np.ndarray) -> float:
        """One 10 ms frame of microphone and of what was played then (both 16 kHz); the near end's
        power over the residual echo expected, in dB."""
        spectrum = np.fft.rfft(np.concatenate([self._previous, far]))
        self._previous = far.astype(float)
        self._far = np.roll(self._far, 1, axis=0)
        self._far[0] = spectrum
        estimate = self._estimate(self._foreground)
        background = self._estimate(self._background)
        residual = near - estimate
        near_power = float(np.mean(near**2))
        residual_power = float(np.mean(residual**2))
        self.level_db = power_db(residual_power)
        # The room rings on after the far end stops, longer than the filter's tail: what is left of
        # the echo falls no faster than a reverberation does.
        echo_power = self._envelope = max(float(np.mean(estimate**2)), self._envelope * self._decay)
        expected = self._leak * echo_power + _FLOOR_POWER
        ratio = residual_power / expected
        alone = not self.ready or ratio < self._adapt_below
        self._quiet = self._quiet + 1 if alone else 0
        if float(np.mean(far.astype(float) ** 2)) > _FLOOR_POWER:
            self._learn(spectrum, near - background, residual_power, near_power, float(np.mean(background**2)))
            if alone and self.ready and echo_power > _FLOOR_POWER:
                self._leak = 0.98 * self._leak + 0.02 * min(residual_power / echo_power, 1.0)
            self._warm -= 1
        return 10 * float(np.log10(max(ratio, 1e-6)))

    def _estimate(self, weights: np.ndarray) -> np.ndarray:
        out: np.ndarray = np.fft.irfft((weights * self._far).sum(axis=0))[BLOCK:]
        return out

    def _learn(
        self, spectrum: np.ndarray, residual: np.ndarray, fg_power: float, near_power: float, bg_echo: float
    ) -> None:
        """The background filter adapts; the foreground takes its weights while they do better and
        nobody else is heard (a few frames of echo alone in a row); a background filter gone astray
        starts again from the foreground."""
        bg_power = float(np.mean(residual**2))
        self._fg_residual = _SMOOTH * self._fg_residual + (1 - _SMOOTH) * fg_power
        self._bg_residual = _SMOOTH * self._bg_residual + (1 - _SMOOTH) * bg_power
        if bg_echo > _DIVERGED * near_power + _FLOOR_POWER or self._bg_residual > _ASTRAY * self._fg_residual:
            self._background = self._foreground.copy()
            self._bg_residual = self._fg_residual
            return
        if self._bg_residual < _BETTER * self._fg_residual and (not self.ready or self._quiet >= _ALONE_FRAMES):
            self._foreground = self._background.copy()
            self._fg_residual = self._bg_residual
            self._learnt = True
        error = np.fft.rfft(np.concatenate([np.zeros(BLOCK), residual]))
        # Normalised by the far end's energy over the whole filter (each bin), not by a smoothed
        # recent power, which lagged when the answer started again after a pause and made the
        # filter diverge.
        energy = np.sum(np.abs(self._far) ** 2, axis=0)
        self._background += self._step * np.conj(self._far) * error / (energy + 1e-3 * float(energy.mean()) + 1e3)
        # The gradient constraint of overlap-save: each partition stays a BLOCK-long filter.
        taps = np.fft.irfft(self._background, axis=1)
        taps[:, BLOCK:] = 0
        self._background = np.fft.rfft(taps, axis=1)
