"""The short tones that tell the user a session opened or closed, or that the conversation is moving
to another chat, with no words to wait for."""

from __future__ import annotations

import math

import numpy as np

from ..config import SPEAKER_RATE


def cue(rising: bool) -> bytes:
    """A 150 ms two-note chime at the speaker's rate: rising when a session opens, falling when it closes."""
    notes = (660.0, 880.0) if rising else (880.0, 660.0)
    n = int(SPEAKER_RATE * 0.075)
    t = np.arange(n) / SPEAKER_RATE
    envelope = np.sin(np.pi * np.arange(n) / n)  # no clicks at the edges
    tone = np.concatenate([np.sin(2 * math.pi * f * t) * envelope for f in notes])
    return (tone * 0.25 * 32767).astype("<i2").tobytes()


SWITCH_CUE_HZ = 1175.0  # above the voices' fundamentals and the session chimes


def switch_cue() -> bytes:
    """A 120 ms single note at the speaker's rate: the conversation is moving to another chat."""
    n = int(SPEAKER_RATE * 0.12)
    envelope = np.sin(np.pi * np.arange(n) / n)
    tone = np.sin(2 * math.pi * SWITCH_CUE_HZ * np.arange(n) / SPEAKER_RATE) * envelope
    return (tone * 0.2 * 32767).astype("<i2").tobytes()
