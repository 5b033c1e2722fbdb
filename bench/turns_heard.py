"""Turn-taking as a person hears it: `python -m bench.turns_heard [--seeds 7,23,41,59] [--per-room N]
[--per-set N] [--lag S]`. Prints its figures; asserts nothing (bench.turns prints the same tables).

The seeds are split before anything was tuned: the settings are chosen on TUNE_SEEDS and the
figures reported on REPORT_SEEDS (the default); a run on the tuning seeds says so in its title.

- **Nobody talking**, per kind of room (tests/peers/turn_corpus.echo_alone: RT60 0.2-0.9 s; the
  echo as loud as the user, 10 dB quieter, 6 dB louder; a speaker that clips): the answer plays
  through the room and Parla's canceller, the floor having heard the user's question first. Answers
  paused, pauses a minute, the time the answer stood still per 10 s of it, the floor taken.
- **Over the answer**, per class (the corpus' interruptions, one-word and longer; its backchannels,
  coughs, knocks, typing, TV from across the room; and a door): cut, sent to the service as a turn
  (activityStart), how long a sound that did not cut the answer froze it (p50), when an interruption
  paused and cut the answer after its first sample (p50, worst), and the share of the answer heard
  (the service stops generating at activityStart: bench.turns.replay).

The service's transcript of a sound is its words, all at once, `--lag` seconds after the sound.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections import defaultdict
from collections.abc import Callable, Iterable

import numpy as np

from bench.report import Report, Table, parse
from bench.turns_replay import DEFAULTS, Outcome, energy, replay, sound_kind
from parla.voice.turns.floor import FloorRules, SpeechProbability, silero
from tests.peers.turn_corpus import ECHO_ROOMS, RATE, EchoRoom, Item, corpus, doors, echo_alone

TUNE_SEEDS = (11, 101)
REPORT_SEEDS = (7, 23, 41, 59)
ONE_WORD = ("wait", "stop", "no")

Detector = Callable[[], SpeechProbability]


@dataclasses.dataclass(frozen=True)
class Variant:
    name: str
    detector: Detector
    rules: FloorRules
    near_end: bool = True


def variants() -> list[Variant]:
    local = dataclasses.replace(DEFAULTS, words=True)
    service_like = dataclasses.replace(DEFAULTS, threshold=0.5, barge_in_ms=DEFAULTS.start_ms, words=False)
    return [
        Variant("local (defaults)", silero, local),
        Variant("local, cut after 600 ms of speech", silero, dataclasses.replace(local, cut_ms=600)),
        Variant("local, cut after 400 ms of speech", silero, dataclasses.replace(local, cut_ms=400)),
        Variant("service-like energy", energy, service_like, near_end=False),
    ]


def ms(values: Iterable[float | None], q: float = 50) -> str:
    got = [v for v in values if v is not None]
    return f"{np.percentile(got, q) * 1000:.0f} ms" if got else "-"


def nobody_talking(
    out: Report, seeds: tuple[int, ...], per_room: int, variant: Variant, rooms: tuple[EchoRoom, ...] = ECHO_ROOMS
) -> Table:
    table = Table(
        ["room", "answers", "paused", "pauses a minute", "stood still per 10 s", "floor taken", "RT60"],
        title=f"nobody talking, {variant.name}, seeds {','.join(map(str, seeds))}",
    )
    rows: dict[str, list[tuple[Item, Outcome]]] = defaultdict(list)
    for seed in seeds:
        for item in echo_alone(seed, per_room, rooms):
            rows[_room_name(item)].append((item, replay(item, variant.detector(), variant.rules, variant.near_end)))
    for name, done in rows.items():
        seconds = sum(len(i.answer) for i, _ in done if i.answer is not None) / RATE
        pauses = sum(o.holds for _, o in done)
        table.row(
            name,
            len(done),
            sum(1 for _, o in done if o.holds),
            f"{pauses / seconds * 60:.1f}",
            f"{sum(o.still_s for _, o in done) / seconds * 10:.2f} s",
            sum(1 for _, o in done if o.ends or o.sent_s is not None),
            f"{min(i.rt60_s for i, _ in done):.2f}-{max(i.rt60_s for i, _ in done):.2f} s",
        )
    out.table(table)
    return table


def _room_name(item: Item) -> str:
    return next(name for name, *_ in ECHO_ROOMS if item.label.startswith(name))


def sound_class(item: Item) -> str:
    if item.kind == "interruption":
        return "interruption, one word" if item.said in ONE_WORD else "interruption, longer"
    return sound_kind(item.label)


CLASSES = ("backchannel", "cough", "knock", "typing", "door", "TV", "interruption, one word", "interruption, longer")


def over_answer(out: Report, items: list[Item], variant: Variant, lag_s: float, title: str) -> Table:
    table = Table(
        ["class", "items", "cut", "sent as a turn", "froze p50", "paused p50", "cut p50", "cut worst", "heard p50"],
        title=f"over the answer, {variant.name}, {title}",
    )
    done: dict[str, list[tuple[Item, Outcome]]] = defaultdict(list)
    for item in items:
        done[sound_class(item)].append((item, replay(item, variant.detector(), variant.rules, variant.near_end, lag_s)))
    for name in CLASSES:
        got = done.get(name, [])
        if not got:
            continue
        cut = [o.start_s for _, o in got if o.start_s is not None]
        froze = [o.still_s for _, o in got if o.start_s is None]
        table.row(
            name,
            len(got),
            len(cut),
            sum(1 for _, o in got if o.sent_s is not None),
            ms(froze),
            ms(o.hold_s for _, o in got),
            ms(cut),
            ms(cut, 100),
            f"{np.median([o.heard for _, o in got]) * 100:.0f}%",
        )
    out.table(table)
    for name in ("interruption, one word", "interruption, longer"):
        missed = [i.label for i, o in done.get(name, []) if o.start_s is None]
        if missed:
            out.line(f"{variant.name}: not cut: {', '.join(missed)}")
    wrongly = [i.label for name in CLASSES[:6] for i, o in done.get(name, []) if o.start_s is not None]
    if wrongly:
        out.line(f"{variant.name}: cut by: {', '.join(wrongly)}")
    return table


def over_answer_items(seeds: tuple[int, ...], per_set: int) -> list[Item]:
    items: list[Item] = []
    for seed in seeds:
        items += [i for i in corpus(seed=seed, per_set=per_set) if i.model_speaking]
        items += list(doors(seed, max(1, per_set // 10)))
    return items


def report(out: Report, seeds: tuple[int, ...], per_room: int, per_set: int, lag_s: float) -> None:
    kind = "tuning seeds" if set(seeds) <= set(TUNE_SEEDS) else "report seeds"
    if set(seeds) & set(TUNE_SEEDS) and kind == "report seeds":
        kind = "seeds mixing tuning and report"
    out.line(f"turns as heard, {kind} {','.join(map(str, seeds))}: words {lag_s * 1000:.0f} ms after each sound")
    nobody_talking(out, seeds, per_room, variants()[0])
    items = over_answer_items(seeds, per_set)
    for variant in variants():
        over_answer(out, items, variant, lag_s, f"{kind} {','.join(map(str, seeds))}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", default=",".join(map(str, REPORT_SEEDS)), help="comma-separated")
    parser.add_argument("--per-room", type=int, default=10, help="answers per kind of room and seed, nobody talking")
    parser.add_argument("--per-set", type=int, default=20, help="interruptions and other sounds per seed")
    parser.add_argument("--lag", type=float, default=0.3, help="the transcript this long after the sound (s)")
    args, out = parse(parser)
    report(out, tuple(int(s) for s in args.seeds.split(",")), args.per_room, args.per_set, args.lag)


if __name__ == "__main__":
    main()
