"""How the first half of a paused sentence ends, by its pitch: `python -m bench.turns_pitch`. Prints
its figures; asserts nothing (bench.turns prints the same note).

The corpus (tests/peers/turn_corpus.py) says a paused sentence two ways: each half synthesised on
its own (the first ends as a complete sentence ends in flite, with a final fall), and the whole
sentence said once and cut at the word boundary, its last syllable drawn out (the first half ends as
a sentence that goes on).
For both, a pitch track (normalised autocorrelation, 40 ms windows every 10 ms, 60-400 Hz) of the
dry voice gives the pitch over the last 200 ms of the first half's voicing against the half's
median, in semitones: a final fall is well below zero at the end.
"""

from __future__ import annotations

import numpy as np

from tests.peers.turn_corpus import DRAWN_OUT, PAUSED, RATE, VOICES, _flite, hesitant

WINDOW = int(0.04 * RATE)
HOP = int(0.01 * RATE)
LOWEST_HZ, HIGHEST_HZ = 60.0, 400.0
VOICED = 0.5  # the autocorrelation's peak from which a window is voiced
TAIL_S = 0.2


def pitch(a: np.ndarray) -> np.ndarray:
    """Pitch per 10 ms (Hz), NaN where unvoiced or quiet, or more than an octave from the median
    (the tracker's octave errors)."""
    floor = 0.05 * float(np.max(np.abs(a))) if len(a) else 0.0
    lags = np.arange(int(RATE / HIGHEST_HZ), int(RATE / LOWEST_HZ) + 1)
    out = []
    for at in range(0, len(a) - WINDOW - lags[-1], HOP):
        x = a[at : at + WINDOW]
        if np.sqrt(np.mean(x**2)) < floor:
            out.append(np.nan)
            continue
        corr = np.array([np.dot(x, a[at + lag : at + lag + WINDOW]) for lag in lags])
        norm = np.sqrt(
            np.dot(x, x) * np.array([np.dot(y, y) for y in (a[at + lag : at + lag + WINDOW] for lag in lags)])
        )
        r = corr / np.maximum(norm, 1e-9)
        best = int(np.argmax(r))
        out.append(RATE / lags[best] if r[best] >= VOICED else np.nan)
    f0 = np.array(out)
    median = np.nanmedian(f0) if np.any(~np.isnan(f0)) else np.nan
    f0[np.abs(np.log2(f0 / median)) > 1] = np.nan
    return f0


def end_semitones(a: np.ndarray) -> tuple[float, float]:
    """(pitch at the half's last voiced 30 ms in semitones against the half's median pitch, and its
    change over the last 200 ms of voicing)."""
    f0 = pitch(a)
    voiced = np.flatnonzero(~np.isnan(f0))
    if len(voiced) < 3:
        return (np.nan, np.nan)
    median = float(np.nanmedian(f0))
    tail = voiced[voiced >= voiced[-1] - int(TAIL_S * RATE / HOP)]
    st = lambda hz: 12 * np.log2(hz / median)
    last = st(np.median(f0[voiced[-3:]]))
    return float(last), float(last - st(np.median(f0[tail[:3]])))


def contours() -> list[str]:
    """One line per voice: the first halves' ends, said alone and cut from the whole sentence."""
    lines = []
    for voice in VOICES:
        alone, inside = [], []
        for first, second in PAUSED:
            alone.append(end_semitones(_flite(first, voice)))
            inside.append(end_semitones(hesitant(first, second, voice, DRAWN_OUT)[0]))
        fmt = lambda ends: " ".join(f"{last:+.1f}/{change:+.1f}" for last, change in ends)
        p50 = lambda ends: "/".join(f"{np.nanmedian([e[k] for e in ends]):+.1f}" for k in (0, 1))
        lines.append(
            f"pitch at the first half's end, {voice}, semitones (the last 30 ms against the half's median / "
            f"its change over the last {TAIL_S * 1000:.0f} ms of voicing), the {len(PAUSED)} sentences: said alone "
            f"{fmt(alone)} (p50 {p50(alone)}); cut from the whole sentence {fmt(inside)} (p50 {p50(inside)})"
        )
    return lines


def main() -> None:
    for line in contours():
        print(line)


if __name__ == "__main__":
    main()
