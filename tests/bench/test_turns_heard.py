"""bench.turns_heard on a few items: the answer with nobody talking in a room where the echo is as
loud as the user plays through without a pause, and the table of sounds over the answer has a row
per class with what a person hears (cut, sent as a turn, froze, share heard)."""

from __future__ import annotations

import pytest

from bench.report import Report
from bench.turns_heard import CLASSES, nobody_talking, over_answer, over_answer_items, variants
from tests.peers.turn_corpus import ECHO_ROOMS

pytestmark = pytest.mark.tier("fast")


def test_nobody_talking_and_the_classes_over_the_answer():
    out = Report(markdown=False)
    local = variants()[0]
    table = nobody_talking(out, (101,), 1, local, ECHO_ROOMS[:1])
    assert [row[:3] for row in table.rows] == [[ECHO_ROOMS[0][0], "1", "0"]], "the answer paused with nobody talking"
    items = over_answer_items((101,), 2)
    assert [i.label for i in items] == ["kal16: wait", "kal16: stop", "kal16: mm-hmm", "kal16: yeah", "door 0"]
    heard = over_answer(out, items, local, 0.3, "test")
    rows = {row[0]: row for row in heard.rows}
    assert list(rows) == [c for c in CLASSES if c in rows] and set(rows) == {
        "backchannel",
        "door",
        "interruption, one word",
    }
    assert rows["interruption, one word"][2] == "2", "a wait or a stop did not cut the answer"
    assert rows["backchannel"][2] == rows["door"][2] == "0"
