"""What the end-of-turn model says in a pause and at the end: `python -m bench.turns_probe [--seed S]`.
Prints its figures; asserts nothing.

A set apart from bench.turns' corpus, to look at thresholds without looking at the cases the
benchmark checks: other sentences, rooms from another seed, the same flite voices (the only
usable ones) and the same ways of making a paused sentence (tests/peers/turn_corpus.py: the whole
sentence said once and cut at the word boundary, or with `--alone` each half its own utterance). For each
sentence the model hears the turn up to 200 ms into its pause, and the whole sentence up to 200 ms
after its last word; optionally with a microphone noise floor added (white noise at N RMS).
"""

from __future__ import annotations

import argparse
from functools import partial

import numpy as np

from parla.voice.turns.end_of_turn import smart_turn
from tests.peers.turn_corpus import DRAWN_OUT, RATE, VOICES, _flite, _paused, hesitant

SENTENCES = (
    ("could you tell me", "how the weather looks this weekend"),
    ("I need to buy", "some milk and bread on the way home"),
    ("set an alarm for", "seven in the morning"),
    ("who was the actor in", "that film we watched last night"),
    ("send a message to", "my brother about dinner"),
)
AFTER = int(0.2 * RATE)  # the model is asked 200 ms into the silence
BEFORE = int(0.3 * RATE)  # and hears the turn from 300 ms before its first sound (PARLA_FLOOR_PREFIX_MS)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=99)
    parser.add_argument("--noise", type=float, nargs="*", default=[0.0, 10.0, 30.0], help="noise floors, RMS")
    parser.add_argument(
        "--alone", action="store_true", help="each half its own utterance (a complete-sounding clause, then silence)"
    )
    parser.add_argument(
        "--lengthen", type=float, default=DRAWN_OUT, help="the first half's last syllable that much longer"
    )
    args = parser.parse_args()
    model = smart_turn()
    rng = np.random.default_rng(args.seed)
    halves = (lambda a, b, v: (_flite(a, v), _flite(b, v))) if args.alone else partial(hesitant, lengthen=args.lengthen)
    items = [_paused(rng, f"{v}: {a} ... {b}", *halves(a, b, v)) for v in VOICES for a, b in SENTENCES]
    for noise in args.noise:
        mid, end = [], []
        for item in items:
            mic = item.mic.astype(float) + (rng.normal(0, noise, len(item.mic)) if noise else 0.0)
            mic = np.clip(mic, -32768, 32767).astype(np.int16)
            start = int(item.onset_s * RATE) - BEFORE
            mid.append(model(mic[start : int(item.pause_s[0] * RATE) + AFTER]))
            end.append(model(mic[start : int(item.end_s * RATE) + AFTER]))
        print(
            f"noise {noise:.0f} RMS, {len(items)} sentences: in the pause p50 {np.median(mid):.2f} "
            f"(below 0.5: {sum(p < 0.5 for p in mid)}/{len(mid)}); at the end p50 {np.median(end):.2f} "
            f"(0.5 or more: {sum(p >= 0.5 for p in end)}/{len(end)}); thresholds that keep 19/20 pauses "
            f"end {sum(p > np.sort(mid)[-2] for p in end)}/{len(end)} finished sentences at once"
        )


if __name__ == "__main__":
    main()
