"""bench.turns on a corpus of one item per set: the corpus is made as described (the answer's echo
cancelled, the user's sound where it says), the sounds over the answer are replayed live (a pause
silences the speaker, so the canceller stops hearing the answer), and the figures come out for
both detectors."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from bench.report import Table
from bench.turns import OVER_ANSWER, PAUSES, over_answer, pauses, recorded
from bench.turns_pitch import end_semitones
from bench.turns_replay import DEFAULTS, energy, replay
from parla.voice.turns.floor import FRAME_SAMPLES, silero
from tests.peers.answer_room import AnswerInRoom
from tests.peers.turn_corpus import RATE, _flite, corpus, hesitant

pytestmark = pytest.mark.tier("fast")


def test_the_corpus_and_both_detectors_on_one_item_per_set():
    items = list(corpus(per_set=1))
    assert [i.kind for i in items] == ["interruption", "not_a_turn", "pause", "hesitation"]
    interruption, _, pause, hesitation = items
    # The same sentence, room and pause, said two ways: only how the first half ends differs.
    assert hesitation.label == pause.label and hesitation.pause_s[1] - hesitation.pause_s[0] == pytest.approx(
        pause.pause_s[1] - pause.pause_s[0]
    )
    before = interruption.mic[: int(interruption.onset_s * RATE)].astype(float)
    assert np.sqrt(np.mean(before**2)) < 150, "the answer's echo was not cancelled before the user spoke"
    assert pause.pause_s[1] - pause.pause_s[0] >= 1.0 and not pause.model_speaking
    model = silero()
    local = [
        model(pause.mic[f * FRAME_SAMPLES : (f + 1) * FRAME_SAMPLES]) for f in range(len(pause.mic) // FRAME_SAMPLES)
    ]
    outcome = replay(pause, recorded(local), DEFAULTS)
    assert len(outcome.ends) == 1 and outcome.ends[0] > pause.end_s, "the default silence rule cut the pause"
    over, kept = Table(OVER_ANSWER), Table(PAUSES)
    energy_rules = dataclasses.replace(DEFAULTS, barge_in_ms=DEFAULTS.start_ms)
    over_answer(over, "energy", items, energy, energy_rules, cut_at_once=True)
    over_answer(over, "local", items, silero, DEFAULTS, cut_at_once=False)
    pauses(kept, "local", [pause], [local], DEFAULTS)
    assert [row[0] for row in over.rows] == ["energy", "local"]
    assert all(row[OVER_ANSWER.index("false interruptions")] in ("0/1", "1/1") for row in over.rows)
    assert kept.rows == [["local", "1/1", kept.rows[0][2], kept.rows[0][3]]]


def test_with_words_a_backchannel_lets_the_answer_go_on_and_a_request_cuts_it():
    interruption, backchannel, *_ = corpus(per_set=1)
    assert backchannel.said == "mm-hmm" and interruption.said == "wait"
    # A barge-in window shorter than both sounds: each reaches the service, and its words decide.
    words = dataclasses.replace(DEFAULTS, barge_in_ms=96, words=True)
    duration = dataclasses.replace(words, words=False)
    assert replay(backchannel, silero(), duration, near_end=True).start_s is not None, "the 'mm-hmm' was too short"
    kept = replay(backchannel, silero(), words, near_end=True, transcript_lag_s=0.3)
    assert kept.holds and kept.start_s is None, "an 'mm-hmm' cut the answer"
    cut = replay(interruption, silero(), words, near_end=True, transcript_lag_s=0.3)
    assert cut.start_s is not None, "a 'wait' did not cut the answer"
    # Cut when its words arrived, not before.
    assert cut.start_s >= interruption.end_s + 0.3 - interruption.onset_s - 0.011


def test_the_live_replay_stops_echoing_the_answer_while_it_is_paused():
    item = next(corpus(per_set=1))
    assert item.answer is not None
    room = AnswerInRoom(item, lag_s=0.0)
    blocks = room.blocks()
    for _ in range(100):  # 1 s of the answer (the user starts at 1.5 s)
        next(blocks)
    before = rms(room.echo[room.t - 3200 : room.t])
    room.pause()
    for _ in range(40):
        next(blocks)
    assert not room.played[room.t - 6400 : room.t].any(), "the paused answer was still played"
    assert rms(room.echo[room.t - 1600 : room.t]) < before / 10, "the room still echoed the paused answer"
    assert room.model_speaking, "a paused answer is still under way"
    room.resume()
    for _ in range(20):
        next(blocks)
    resumed = room.t - 20 * 160
    assert np.array_equal(room.played[resumed : room.t], item.answer[16_000 : 16_000 + 3200]), (
        "the answer did not go on from where it paused"
    )
    room.stop()
    next(blocks)
    assert not room.model_speaking


def rms(a: np.ndarray) -> float:
    return float(np.sqrt(np.mean(a**2)))


def test_a_hesitation_is_one_utterance_cut_at_the_word_boundary():
    first, second = "I'd like to book", "the hotel near the river"
    head, tail = hesitant(first, second, "slt")
    assert np.array_equal(np.concatenate([head, tail]), _flite(f"{first} {second}", "slt"))
    drawn, rest = hesitant(first, second, "slt", lengthen=1.5)
    assert np.array_equal(rest, tail) and len(drawn) > len(head) + 0.04 * RATE, "the last syllable was not drawn out"
    # Said alone, the first half ends lower (flite's final fall) than where the sentence goes on.
    alone = _flite(first, "slt")
    assert end_semitones(drawn)[0] > end_semitones(alone)[0] + 1.0
