"""bench.turns_end on one paused sentence: the rows come out, the silence window keeps the pause,
and the model's questions are counted and timed."""

from __future__ import annotations

from bench.report import Report
from bench.turns_end import COLUMNS, end_of_turn_rows
from parla.voice.floor import FRAME_SAMPLES, silero
from tests.peers.turn_corpus import corpus


def test_the_end_of_turn_rows_on_one_paused_sentence(capsys):
    paused = [i for i in corpus(per_set=1) if i.kind == "pause"]
    model = silero()
    local = [
        [model(i.mic[f * FRAME_SAMPLES : (f + 1) * FRAME_SAMPLES]) for f in range(len(i.mic) // FRAME_SAMPLES)]
        for i in paused
    ]
    table = end_of_turn_rows(Report(markdown=False), paused, local)
    out = capsys.readouterr().out
    silence, *models = table.rows
    assert silence[COLUMNS.index("pauses kept")] == "1/1", "the silence window cut the pause"
    assert len(models) == 4 and all(r[COLUMNS.index("model wall p50")].endswith(" ms") for r in models)
    assert "smart-turn resident memory +" in out
