"""The rules of importance and the offline auto-pin detector, held to what it measured on its
labelled set (tests/data/autopin_statements.jsonl: 60 statements, 20 deserve a pin)."""

from __future__ import annotations

import pytest

from bench.auto_pins import labelled, score
from parla.memory.language.auto_pins import offline_candidates, same_fact
from parla.memory.language.importance import fact_key, turn_importance
from parla.records.turn import Turn

pytestmark = pytest.mark.tier("fast")


def test_the_detector_keeps_its_precision_and_recall_on_the_labelled_set():
    rows = labelled()
    assert (len(rows), sum(1 for r in rows if r.pin)) == (60, 20)
    result = score(rows)
    # measured when the set was written: precision 1.00, recall 0.95 (19 of 20)
    assert result.precision >= 0.95 and result.recall >= 0.9, result


def test_importance_ranks_durable_statements_over_small_talk():
    allergy = Turn.of("user", "Good morning. I'm allergic to penicillin.")
    question = Turn.of("user", "Am I allergic to penicillin?")
    detail = Turn.of("user", "The museum opens at 9.")
    answer = Turn.of("model", "I'm allergic to nothing, I am an assistant.")
    assert turn_importance(allergy) == 9.5
    assert turn_importance(question) == 3.0 < turn_importance(detail) == 4.5
    assert turn_importance(answer) == 1.5  # the assistant's words are never a statement about the user
    assert [c.content for c in offline_candidates([allergy, answer])] == [
        'The user said: "I\'m allergic to penicillin."'
    ]


def test_the_same_fact_in_other_words_is_the_same():
    assert fact_key("I'm allergic to Penicillin!") == fact_key("i am allergic to penicillin")
    assert same_fact('The user said: "I\'m allergic to penicillin."', "User is allergic to penicillin")
    assert not same_fact("allergic to penicillin", "allergic to nuts")
