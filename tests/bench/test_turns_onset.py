"""bench.turns_onset on one interruption: the judgement beside the canceller goes above the echo
soon after the user's first sound, and a run counts only once it has lasted."""

from __future__ import annotations

import pytest

from bench.turns_onset import first_run, judgements
from parla.voice.config import VoiceConfig
from tests.peers.turn_corpus import RATE, corpus

pytestmark = pytest.mark.tier("fast")


def test_a_run_counts_once_it_has_lasted():
    assert first_run([0.0, 7.0, 0.0, 7.0, 7.0, 7.0], 6.0, 20) == 50
    assert first_run([None, 7.0, 0.0, 7.0], 6.0, 20) is None


def test_the_judgement_rises_above_the_echo_at_an_interruption():
    item = next(i for i in corpus(per_set=1) if i.kind == "interruption")  # kal16's "wait"
    trace = judgements(item)
    start = int(item.onset_s * RATE) // (RATE // 100)
    config = VoiceConfig()
    assert first_run(trace[start - 40 : start], config.floor_near_end_db, config.floor_near_end_ms) is None
    judged = first_run(trace[start:], config.floor_near_end_db, config.floor_near_end_ms)
    assert judged is not None and judged <= 400
