"""The onset over the answer, judged beside the echo canceller: the floor reads the canceller's
10 ms judgements a 32 ms Silero frame at a time, and a run above the echo that lasted
`near_end_ms` inside a frame pauses the answer even when it ended before the frame did."""

from __future__ import annotations

from parla.voice.config import VoiceConfig
from parla.voice.echo import Cancelled
from parla.voice.floor import Floor, FloorRules, Marker
from parla.voice.near_end import BLOCK

RULES = FloorRules.of(VoiceConfig())


def judged(db: float) -> Cancelled:
    block = Cancelled(bytes(BLOCK * 2))
    block.near_end_db = (db,)
    return block


def markers(dbs: list[float]) -> list[Marker]:
    floor = Floor(RULES, probability=lambda frame: 0.0)
    out: list[bytes | Marker] = []
    for db in dbs:
        out += floor.feed(judged(db), model_speaking=True)
    return [m for m in out if isinstance(m, Marker)]


def test_a_run_above_the_echo_inside_a_frame_pauses_the_answer():
    # The second 32 ms frame holds the 4th to 6th judgements: 20 ms above the echo, then below.
    loud = RULES.near_end_db + 4
    assert markers([0.0, 0.0, 0.0, loud, loud, 0.0, 0.0, 0.0, 0.0]) == [Marker.HOLD]


def test_a_moment_above_the_echo_does_not():
    loud = RULES.near_end_db + 4
    assert markers([0.0, 0.0, 0.0, loud, 0.0, loud, 0.0, 0.0, 0.0]) == []
