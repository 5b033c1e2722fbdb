"""Why an interruption pauses the answer late: `python -m bench.turns_onset [--seed S] [--per-set N]`.
Prints its figures; asserts nothing.

For each interruption of bench.turns' corpus, over the answer as it plays on (never paused, so the
figures do not depend on a detector): when the near-end judgement beside the canceller (voice.audio.near_end)
first stays `PARLA_FLOOR_NEAR_END_DB` above the echo expected for `PARLA_FLOOR_NEAR_END_MS`, when
the user's own sound at the microphone first comes within 20 dB of its peak (10 ms steps), and when
Silero hears speech in the user's sound alone (no echo, no canceller). All from the item's onset:
the first sample of the user's sound. Then the judgement and the user's level per 10 ms for the
first 350 ms.
"""

from __future__ import annotations

import argparse

import numpy as np

from bench.report import Table, parse
from parla.voice.audio.near_end import NearEnd
from parla.voice.config import VoiceConfig
from parla.voice.turns.floor import FRAME_SAMPLES, silero
from tests.peers.answer_room import AnswerInRoom
from tests.peers.turn_corpus import RATE, Item, corpus

STEP = RATE // 100  # 10 ms
SHOWN = 35  # steps of the traces printed


def judgements(item: Item) -> list[float | None]:
    """The near-end judgement of each 10 ms over the whole item, the answer never paused."""
    room = AnswerInRoom(item, near_end=NearEnd.of(VoiceConfig()))
    return [(getattr(block, "near_end_db", ()) or (None,))[0] for block in room.blocks()]


def first_run(trace: list[float | None], db: float, ms: int) -> int | None:
    run = 0
    for k, d in enumerate(trace):
        run = run + 10 if d is not None and d >= db else 0
        if run >= ms:
            return (k + 1) * 10
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--per-set", type=int, default=20)
    parser.add_argument("--seed", type=int, default=7)
    args, out = parse(parser)
    config = VoiceConfig()
    table = Table(
        ["interruption", "judged above the echo", "user within 20 dB of its peak", "Silero on the user alone"],
        title="onsets of the interruptions, ms after the user's first sample",
    )
    traces = []
    for item in (i for i in corpus(seed=args.seed, per_set=args.per_set) if i.kind == "interruption"):
        assert item.user is not None
        start = int(item.onset_s * RATE)
        trace = judgements(item)[start // STEP : start // STEP + 45]
        user = item.user[start : start + 45 * STEP].astype(float)
        level = 20 * np.log10(np.maximum(np.sqrt(np.mean(user.reshape(-1, STEP) ** 2, axis=1)), 1e-3))
        level -= level.max()
        vad = silero()
        clean = np.clip(item.user[start:], -32768, 32767).astype(np.int16)
        heard = next(
            (
                (f + 1) * FRAME_SAMPLES * 1000 // RATE
                for f in range(15)
                if vad(clean[f * FRAME_SAMPLES : (f + 1) * FRAME_SAMPLES]) >= config.floor_threshold
            ),
            None,
        )
        judged = first_run(trace, config.floor_near_end_db, config.floor_near_end_ms)
        table.row(item.label, judged, int(np.argmax(level > -20)) * 10, heard)
        traces.append((item.label, trace, level))
    out.table(table)
    for label, trace, level in traces:
        out.line(f"{label}: dB above the echo " + " ".join("-" if d is None else f"{d:+.0f}" for d in trace[:SHOWN]))
        out.line(f"{label}: user dB from peak " + " ".join(f"{e:+.0f}" for e in level[:SHOWN]))


if __name__ == "__main__":
    main()
