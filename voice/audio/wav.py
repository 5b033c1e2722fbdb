"""Speech audio as the speaker plays it: 16-bit mono at the speaker's rate, from a WAV file or raw
16-bit PCM at another rate (what a speech command writes, what a speech model answers)."""

from __future__ import annotations

import io
import wave
from pathlib import Path

import numpy as np

from ..config import SPEAKER_RATE
from ..errors import SpeechFailed


def resampled(pcm: np.ndarray, rate: int) -> np.ndarray:
    if rate == SPEAKER_RATE or not len(pcm):
        return pcm
    n = int(len(pcm) * SPEAKER_RATE / rate)
    return np.interp(np.arange(n) * rate / SPEAKER_RATE, np.arange(len(pcm)), pcm)


def _int16(samples: np.ndarray) -> bytes:
    return np.clip(samples, -32768, 32767).astype("<i2").tobytes()


def speaker_pcm(raw: bytes, rate: int) -> bytes:
    """Raw 16-bit little-endian mono PCM at `rate`, at the speaker's rate."""
    samples = np.frombuffer(raw[: len(raw) // 2 * 2], "<i2").astype(np.float64)
    return _int16(resampled(samples, rate))


def speaker_pcm_of_wav(wav: Path | bytes, what: str) -> bytes:
    """A 16-bit WAV file (a path, or its bytes), mixed to mono, at the speaker's rate; `what` wrote
    it, for the message when it is not 16-bit."""
    try:
        with wave.open(str(wav) if isinstance(wav, Path) else io.BytesIO(wav)) as w:
            if w.getsampwidth() != 2:
                raise SpeechFailed(f"{what} wrote {8 * w.getsampwidth()}-bit audio; 16-bit is needed")
            frames = np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.float64)
            mono = frames.reshape(-1, w.getnchannels()).mean(axis=1)
            return _int16(resampled(mono, w.getframerate()))
    except (wave.Error, EOFError) as e:
        raise SpeechFailed(f"{what} wrote no readable WAV file: {e}") from e
