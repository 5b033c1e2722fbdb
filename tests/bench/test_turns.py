"""bench.turns on a corpus of one item per set: the corpus is made as described (the answer's echo
cancelled, the user's sound where it says), and the figures come out for both detectors."""

from __future__ import annotations

import dataclasses

import numpy as np

from bench.report import Table
from bench.turns import COLUMNS, DEFAULTS, energy_probabilities, replay, report
from parla.voice.floor import FRAME_SAMPLES, silero
from tests.peers.turn_corpus import RATE, corpus


def test_the_corpus_and_both_detectors_on_one_item_per_set():
    items = list(corpus(per_set=1))
    assert [i.kind for i in items] == ["interruption", "not_a_turn", "pause"]
    interruption, _, pause = items
    before = interruption.mic[: int(interruption.onset_s * RATE)].astype(float)
    assert np.sqrt(np.mean(before**2)) < 150, "the answer's echo was not cancelled before the user spoke"
    assert pause.pause_s[1] - pause.pause_s[0] >= 1.0 and not pause.model_speaking
    model = silero()
    local = [
        [model(i.mic[f * FRAME_SAMPLES : (f + 1) * FRAME_SAMPLES]) for f in range(len(i.mic) // FRAME_SAMPLES)]
        for i in items
    ]
    outcome = replay(pause, local[2], DEFAULTS)
    assert len(outcome.ends) == 1 and outcome.ends[0] > pause.end_s, "the default silence rule cut the pause"
    energy = [energy_probabilities(i.mic) for i in items]
    table = Table(COLUMNS)
    energy_rules = dataclasses.replace(DEFAULTS, barge_in_ms=DEFAULTS.start_ms)
    report(table, "energy", items, energy, energy_rules, cut_at_once=True)
    report(table, "local", items, local, DEFAULTS, cut_at_once=False)
    assert [row[0] for row in table.rows] == ["energy", "local"]
    assert all(row[COLUMNS.index("pauses kept")] in ("0/1", "1/1") for row in table.rows)
