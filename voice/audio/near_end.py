"""How much of the microphone is not the answer's echo, judged before the echo canceller's
suppressor has a say.

WebRTC's AEC3 removes the echo in two stages: a linear filter, then a nonlinear suppressor that,
while the far end talks, also holds back the user's first syllables (double-talk suppression):
through a reverberant room the user's "stop" comes out of it 15 dB down or not at all. The
engine does not expose its linear stage, so this module runs one of its own beside it, for
judging only (what is sent is still AEC3's output): a partitioned-block frequency-domain adaptive
filter (overlap-save, 10 ms blocks, `tail_ms` of echo path), normalised per bin. Its residual
keeps the user's voice whole and the echo some 8-10 dB down; `process` returns, per 10 ms frame,
the residual's power over the residual echo it expects (the filter's echo estimate scaled by the
residual-to-estimate ratio learnt while nobody else talks), in dB: about 0 for echo alone, well
above it when someone talks over the answer.

The filter adapts while the far end plays and that ratio stays low, so the user's voice does not
teach it a wrong echo path (double talk freezes it, as in every adaptive canceller); over the
first `warm_s` of played sound it adapts whatever the ratio (it cannot judge yet), and the ratio
is not trusted (`ready`).
"""

from __future__ import annotations

import numpy as np

from ..config import MIC_RATE, VoiceConfig

BLOCK = MIC_RATE // 100  # 10 ms
# The residual's floor: quieter than this is silence whatever the echo (about -56 dBFS).
_FLOOR_POWER = 50.0**2


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
        self._weights = np.zeros((self.partitions, bins), complex)
        self._previous = np.zeros(BLOCK)
        self._power = np.full(bins, 1e4)  # the far end's power per bin, smoothed
        self._step = step
        self._adapt_below = 10 ** (adapt_below_db / 10)
        self._leak = 1.0  # residual echo over the filter's estimate; learnt while the far end talks alone
        self._envelope = 0.0  # the echo estimate's power, falling no faster than the room's reverberation
        self._decay = 10 ** (-decay_db_per_s / 100 / 10)
        self._warm = round(warm_s * 100)  # 10 ms frames of played sound left before the ratio is trusted

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
        return self._warm <= 0

    def process(self, near: np.ndarray, far: np.ndarray) -> float:
        """One 10 ms frame of microphone and of what was played then (both 16 kHz); the near end's
        power over the residual echo expected, in dB."""
        spectrum = np.fft.rfft(np.concatenate([self._previous, far]))
        self._previous = far.astype(float)
        self._far = np.roll(self._far, 1, axis=0)
        self._far[0] = spectrum
        estimate = np.fft.irfft((self._weights * self._far).sum(axis=0))[BLOCK:]
        residual = near - estimate
        # The room rings on after the far end stops, longer than the filter's tail: what is left of
        # the echo falls no faster than a reverberation does.
        echo_power = self._envelope = max(float(np.mean(estimate**2)), self._envelope * self._decay)
        residual_power = float(np.mean(residual**2))
        expected = self._leak * echo_power + _FLOOR_POWER
        ratio = residual_power / expected
        if float(np.mean(far.astype(float) ** 2)) > _FLOOR_POWER and (not self.ready or ratio < self._adapt_below):
            self._adapt(spectrum, residual)
            if echo_power > _FLOOR_POWER:
                self._leak = 0.98 * self._leak + 0.02 * min(residual_power / echo_power, 1.0)
            self._warm -= 1
        return 10 * float(np.log10(max(ratio, 1e-6)))

    def _adapt(self, spectrum: np.ndarray, residual: np.ndarray) -> None:
        error = np.fft.rfft(np.concatenate([np.zeros(BLOCK), residual]))
        self._power = 0.9 * self._power + 0.1 * np.abs(spectrum) ** 2
        self._weights += self._step * np.conj(self._far) * error / (self.partitions * self._power + 1e3)
        # The gradient constraint of overlap-save: each partition stays a BLOCK-long filter.
        taps = np.fft.irfft(self._weights, axis=1)
        taps[:, BLOCK:] = 0
        self._weights = np.fft.rfft(taps, axis=1)
