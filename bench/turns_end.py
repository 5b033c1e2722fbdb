"""The end of the user's turn in bench.turns, by silence and by the end-of-turn model, side by side
on each set of the corpus' paused sentences (a 1.0-1.5 s hesitation in the middle, the model
silent), and on sentences with the hesitation filled with "um".

Each row replays the same Silero probabilities through Floor with the default rules: the silence
window alone, then with Pipecat's smart-turn v3.2 (voice.turns.end_of_turn) asked after
`PARLA_FLOOR_END_CHECK_MS` of silence ("complete" ends the turn there, else the silence window
does). A model's answer counts from when it would arrive, as the product asks on a worker thread
while the audio goes on: each question's measured time is added to the replay's clock, its CPU
time (as on an idle core: the same figures on any machine of the same speed) or its wall time (as
on this machine now; an answer that comes after the user went on is dropped, so a busy machine
keeps more pauses).
Figures: "pauses kept N/M", end of turn p50/p95 after the last word and where it goes (Silero's tail
after the last word, then the quiet until the turn ends), the model's CPU and wall time
per question, the share of a core it takes over the sentences, the resident memory it adds.
"""

from __future__ import annotations

import dataclasses
import os
import resource
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from functools import cache

import numpy as np

from bench.report import Report, Table
from parla.voice.config import VoiceConfig
from parla.voice.turns.end_of_turn import EndOfTurn, EndRules, TurnCompletion, smart_turn
from parla.voice.turns.floor import FRAME_BYTES, FRAME_S, FRAME_SAMPLES, Floor, FloorRules, Marker, silero
from tests.peers.turn_corpus import DRAWN_OUT, PAUSED, RATE, VOICES, Item, _paused, hesitant

FLOOR = FloorRules.of(VoiceConfig())
END = EndRules.of(VoiceConfig())
CHECKS_MS = (200, 300)
SOONER_MS = (64, 100)  # the model asked after less silence
# (model threshold, fallback silence ms, asked again every N ms of silence; 0: once)
STRICT_ROWS = ((0.9, 1500, 0), (0.9, 2000, 0), (0.97, 2000, 0), (0.5, 1500, 200), (0.9, 1500, 200), (0.97, 2000, 300))
BLOCK_BYTES = int(0.02 * RATE) * 2  # the microphone's 20 ms blocks (voice.audio.devices.Microphone)
WORDS_LAGS_S = (0.3, 0.8)  # the service's transcript, this long after the words (bench.turns' words rows)


def rss_mb() -> float:
    with open(f"/proc/{os.getpid()}/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


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
    by_wall: bool  # an answer is due after the question's wall time, else after its CPU time
    wall_s: list[float] = field(default_factory=list)
    cpu_s: list[float] = field(default_factory=list)

    def end_of_turn(self, clock: list[float]) -> EndOfTurn:
        def submit(question: Callable[[], float]) -> Future[float]:
            wall, cpu = time.perf_counter(), time.thread_time()
            answer = question()
            self.cpu_s.append(time.thread_time() - cpu)
            self.wall_s.append(time.perf_counter() - wall)
            return _Later(answer, clock[0] + (self.wall_s if self.by_wall else self.cpu_s)[-1], clock)

        return EndOfTurn(self.rules, self.model, submit=submit)


def halves(item: Item) -> tuple[str, str]:
    """The words before and after the paused sentence's hesitation (its label: "voice: first ... second")."""
    first, second = item.label.split(": ", 1)[1].split(" ... ")
    return first, second


def turn_ends(
    item: Item,
    probabilities: list[float],
    questions: Questions | None,
    rules: FloorRules = FLOOR,
    words_lag_s: float | None = None,
) -> list[tuple[float, float]]:
    """When the floor ends the user's turn in the item, replayed in the microphone's 20 ms blocks,
    and when the user's quiet before it began (Silero's last speech frame). With `words_lag_s`, the
    service's transcript of each half reaches the floor that long after the half's last word."""
    clock = [0.0]
    it = iter(probabilities)
    end = questions.end_of_turn(clock) if questions is not None else None
    floor = Floor(rules, probability=lambda frame: next(it), end_of_turn=end)
    pcm = item.mic.astype("<i2").tobytes()[: len(probabilities) * FRAME_BYTES]
    words = [] if words_lag_s is None else list(zip((item.pause_s[0], item.end_s), halves(item), strict=True))
    ends = []
    for at in range(0, len(pcm), BLOCK_BYTES):
        clock[0] = min(at + BLOCK_BYTES, len(pcm)) / FRAME_BYTES * FRAME_S
        while words and clock[0] >= words[0][0] + (words_lag_s or 0.0):
            floor.heard(" " + words.pop(0)[1])
        if Marker.END in floor.feed(pcm[at : at + BLOCK_BYTES], model_speaking=False):
            judged = min(at + BLOCK_BYTES, len(pcm)) // FRAME_BYTES * FRAME_S  # the last frame Silero judged
            ends.append((clock[0], judged - floor.quiet_ms / 1000))
    return ends


def pct(values: list[float], q: float) -> str:
    return f"{np.percentile(values, q) * 1000:.0f} ms" if values else "n/a"


COLUMNS = [
    "local detection, end of turn by",
    "pauses kept",
    "end of turn p50",
    "end of turn p95",
    "of it: Silero's tail p50",
    "then quiet p50",
    "model CPU p50 / p95 per question",
    "model wall p50",
    "model, % of a core",
]


def row(
    table: Table,
    name: str,
    paused: list[Item],
    local: list[list[float]],
    questions: Questions | None,
    rules: FloorRules = FLOOR,
    words_lag_s: float | None = None,
) -> str:
    """Adds the row; returns the pauses the rule cut, to say under the table."""
    outcomes = [(i, turn_ends(i, p, questions, rules, words_lag_s)) for i, p in zip(paused, local, strict=True)]
    cut = [i for i, ends in outcomes if any(i.onset_s < t < i.end_s for t, _ in ends)]
    # The first end after the last word: when, and when the quiet before it began.
    final = [(i, min(e for e in ends if e[0] >= i.end_s)) for i, ends in outcomes if any(t >= i.end_s for t, _ in ends)]
    latency = [t - i.end_s for i, (t, _) in final]
    tail = [quiet - i.end_s for i, (_, quiet) in final]
    after = [t - quiet for _, (t, quiet) in final]
    talking = sum(len(i.mic) for i in paused) / RATE
    model = (
        (
            f"{pct(questions.cpu_s, 50)} / {pct(questions.cpu_s, 95)}",
            pct(questions.wall_s, 50),
            f"{sum(questions.cpu_s) / talking * 100:.1f}%",
        )
        if questions is not None
        else ("-", "-", "-")
    )
    kept = f"{len(outcomes) - len(cut)}/{len(outcomes)}"
    table.row(name, kept, pct(latency, 50), pct(latency, 95), pct(tail, 50), pct(after, 50), *model)
    return f"{name}, pauses cut: {', '.join(i.label for i in cut)}" if cut and len(cut) < len(outcomes) else ""


def filled(seed: int, n: int) -> list[Item]:
    """`n` of the corpus' paused sentences with the hesitation filled: "um" said after the first half (as
    in issue 31's "I'd like to book... um... the hotel"), drawn out, inside the sentence said once as
    the corpus' hesitations are; rooms drawn from `seed`."""
    rng = np.random.default_rng(seed)
    items = []
    for i in range(n):
        (first, second), voice = PAUSED[i % len(PAUSED)], VOICES[i // len(PAUSED) % len(VOICES)]
        halves = hesitant(f"{first} um", second, voice, DRAWN_OUT)
        items.append(_paused(rng, f"{voice}: {first} um ... {second}", *halves))
    return items


def probabilities(items: list[Item]) -> list[list[float]]:
    """Silero's speech probability per frame of each item."""
    vad = silero()
    return [
        [vad(i.mic[f * FRAME_SAMPLES : (f + 1) * FRAME_SAMPLES]) for f in range(len(i.mic) // FRAME_SAMPLES)]
        for i in items
    ]


@cache
def loaded() -> tuple[TurnCompletion, float]:
    """The model, asked once (the first question allocates what the session needs), and the resident
    memory it added (MB)."""
    before = rss_mb()
    model = smart_turn()
    model(np.zeros(RATE, np.int16))
    return model, rss_mb() - before


def filled_rows(out: Report, n: int, seed: int = 1007) -> None:
    """The silence window, the model and the words on `n` filled hesitations."""
    model = loaded()[0]
    items = filled(seed, n)
    probs = probabilities(items)
    table = Table(
        COLUMNS, title=f"end of turn, the hesitation filled with 'um' ({len(items)} sentences, rooms of seed {seed})"
    )
    notes = [row(table, f"silence {FLOOR.end_silence_ms} ms", items, probs, None)]
    notes.append(
        row(
            table,
            f"smart-turn p>={END.threshold} asked at {END.check_ms} ms, else {FLOOR.end_silence_ms} ms, CPU-timed",
            items,
            probs,
            Questions(model, END, by_wall=False),
        )
    )
    words = dataclasses.replace(FLOOR, end_words=True)
    for lag in WORDS_LAGS_S:
        notes.append(
            row(
                table,
                f"words at +{lag * 1000:.0f} ms, end at {words.end_check_ms} ms unless the last word goes on",
                items,
                probs,
                None,
                words,
                lag,
            )
        )
    out.table(table)
    for note in filter(None, notes):
        out.line(note)


def end_of_turn_rows(
    out: Report, paused: list[Item], local: list[list[float]], name: str = "paused sentences"
) -> Table:
    """The silence window, the model and the words, on one set of paused sentences and their Silero
    probabilities."""
    model, added = loaded()
    table = Table(COLUMNS, title=f"end of turn, local detection, the model silent: {name}")
    notes = [row(table, f"silence {FLOOR.end_silence_ms} ms (PARLA_FLOOR_END_MODEL=none)", paused, local, None)]
    for check, by_wall in ((check, by_wall) for check in CHECKS_MS for by_wall in (False, True)):
        questions = Questions(model, dataclasses.replace(END, check_ms=check), by_wall)
        timed = "wall" if by_wall else "CPU"
        name = f"smart-turn p>={END.threshold} asked at {check} ms, else {FLOOR.end_silence_ms} ms, {timed}-timed"
        notes.append(row(table, name, paused, local, questions))
    # Asked sooner: less of the silence before the question (CPU-timed).
    for check in SOONER_MS:
        questions = Questions(model, dataclasses.replace(END, check_ms=check), by_wall=False)
        name = f"smart-turn p>={END.threshold} asked at {check} ms, else {FLOOR.end_silence_ms} ms, CPU-timed"
        notes.append(row(table, name, paused, local, questions))
    # A stricter model with a longer fallback silence, asked once or again as the silence grows (CPU-timed).
    for threshold, silence, recheck in STRICT_ROWS:
        questions = Questions(model, dataclasses.replace(END, threshold=threshold, recheck_ms=recheck), by_wall=False)
        rules = dataclasses.replace(FLOOR, end_silence_ms=silence)
        again = f", again every {recheck} ms" if recheck else ""
        name = f"smart-turn p>={threshold} asked at {END.check_ms} ms{again}, else {silence} ms, CPU-timed"
        notes.append(row(table, name, paused, local, questions, rules))
    # The transcript's last word (PARLA_FLOOR_END_WORDS), alone and as a veto on the model.
    words = dataclasses.replace(FLOOR, end_words=True)
    for lag in WORDS_LAGS_S:
        name = f"words at +{lag * 1000:.0f} ms, end at {words.end_check_ms} ms unless the last word goes on"
        notes.append(row(table, name, paused, local, None, words, lag))
        questions = Questions(model, END, by_wall=False)
        name = f"smart-turn p>={END.threshold} at {END.check_ms} ms unless the last word goes on, words at +{lag * 1000:.0f} ms"
        notes.append(row(table, name, paused, local, questions, words, lag))
    # All three together: the strictest model, asked soon, the words' veto, a longer fallback.
    threshold, silence, _ = STRICT_ROWS[2]
    soon = dataclasses.replace(END, threshold=threshold, check_ms=SOONER_MS[0])
    for lag in (None, WORDS_LAGS_S[0]):
        rules = dataclasses.replace(words if lag else FLOOR, end_silence_ms=silence, end_check_ms=soon.check_ms)
        veto = f" unless the last word goes on, words at +{lag * 1000:.0f} ms" if lag else ""
        name = f"smart-turn p>={threshold} asked at {soon.check_ms} ms{veto}, else {silence} ms, CPU-timed"
        notes.append(row(table, name, paused, local, Questions(model, soon, by_wall=False), rules, lag))
    out.table(table)
    for note in filter(None, notes):
        out.line(note)
    out.line(
        f"smart-turn resident memory +{added:.1f} MB, onnxruntime included "
        f"(process peak {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB)"
    )
    return table
