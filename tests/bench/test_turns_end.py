"""bench.turns_end on one paused sentence: the rows come out, the silence window keeps the pause,
the model's questions are counted and timed, and the transcript's words end the turn sooner."""

from __future__ import annotations

import pytest

from bench.report import Report
from bench.turns_end import COLUMNS, end_of_turn_rows
from parla.voice.turns.floor import FRAME_SAMPLES, silero
from tests.peers.turn_corpus import corpus

pytestmark = pytest.mark.tier("fast")


def test_the_end_of_turn_rows_on_one_paused_sentence(capsys):
    paused = [i for i in corpus(per_set=1) if i.kind == "hesitation"]
    model = silero()
    local = [
        [model(i.mic[f * FRAME_SAMPLES : (f + 1) * FRAME_SAMPLES]) for f in range(len(i.mic) // FRAME_SAMPLES)]
        for i in paused
    ]
    table = end_of_turn_rows(Report(markdown=False), paused, local)
    out = capsys.readouterr().out
    silence, *models = table.rows
    assert silence[COLUMNS.index("pauses kept")] == "1/1", "the silence window cut the pause"
    asked = [r for r in models if r[COLUMNS.index("model wall p50")] != "-"]
    assert len(models) == 18 and len(asked) == 16
    assert all(r[COLUMNS.index("model wall p50")].endswith(" ms") for r in asked)
    # The words rule alone ends the finished sentence long before the silence window would.
    words = next(r for r in models if r[0].startswith("words at +300 ms"))
    p50 = COLUMNS.index("end of turn p50")
    assert int(words[p50].split()[0]) < int(silence[p50].split()[0]) - 500
    assert "smart-turn resident memory +" in out
