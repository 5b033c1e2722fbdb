"""Speech from across the room (a TV 15 dB under the user, in a simulated room) over the answer: the
floor, having learnt the user's level from their question, does not let it take the floor (it may
pause the answer a moment); the user's own "stop" in the same room does, and so does a short "wait". Without the level rule
the TV takes the floor (its words then cut the answer). Real signals: flite speech, pyroomacoustics rooms, Parla's canceller and near-end
judgement, the real Silero model."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from parla.voice.audio.near_end import NearEnd
from parla.voice.config import VoiceConfig
from parla.voice.turns.floor import Floor, FloorRules, Marker
from tests.peers.answer_room import AnswerInRoom
from tests.peers.turn_corpus import ANSWER, TV, Item, _flite, _over_answer

pytestmark = pytest.mark.tier("fast")

RULES = FloorRules.of(VoiceConfig())
SEED = 5


def markers(item: Item, rules: FloorRules) -> list[Marker]:
    """The item over the answer, the floor having heard the user's question first; a hold pauses
    the answer in the room, a release lets it go on."""
    floor = Floor(rules)
    assert item.question is not None
    asked = item.question.astype("<i2").tobytes()
    for i in range(0, len(asked), 640):
        floor.feed(asked[i : i + 640], model_speaking=False)
    room = AnswerInRoom(item, near_end=NearEnd.of(VoiceConfig()))
    out: list[Marker] = []
    for block in room.blocks():
        for m in floor.feed(block, room.model_speaking):
            if m is Marker.HOLD:
                room.pause()
            elif m is Marker.RELEASE:
                room.resume()
            if isinstance(m, Marker):
                out.append(m)
    return out


def _said(voice: str, word: str, answer: dict[str, np.ndarray]) -> Item:
    return _over_answer(
        np.random.default_rng(SEED),
        "interruption",
        f"{voice}: {word}",
        _flite(word, voice),
        answer,
        said=word,
        voice=voice,
    )


@pytest.fixture(scope="module")
def items() -> dict[str, Item]:
    """A TV, a "stop" and a short "wait", each over the answer in a room of its own (not the
    benchmark's seeds)."""
    answer = {v: _flite(ANSWER, v) for v in ("kal16", "slt")}
    tv = _over_answer(
        np.random.default_rng(SEED), "not_a_turn", "TV 0", _flite(TV[0], "awb"), answer, far=True, said=TV[0]
    )
    return {"TV 0": tv, "slt: stop": _said("slt", "stop", answer), "rms: wait": _said("rms", "wait", answer)}


def test_a_tv_across_the_room_does_not_take_the_floor(items):
    heard = markers(items["TV 0"], RULES)
    assert Marker.START not in heard and Marker.CUT not in heard, heard
    assert heard.count(Marker.HOLD) <= 1, "the TV kept pausing the answer"
    # Without the user's level to compare with, the same TV takes the floor.
    assert Marker.START in markers(items["TV 0"], dataclasses.replace(RULES, below_user_db=0.0))


def test_the_users_own_voice_still_takes_it(items):
    heard = markers(items["slt: stop"], RULES)
    assert heard[:2] == [Marker.HOLD, Marker.START], heard


def test_a_short_wait_is_the_users_too(items):
    """rms's "wait" lasts 0.26 s: once the answer pauses, what Silero still hears of it is mostly
    the room's reverberation, far under the user's level on average, though its loudest frame is
    at the user's level."""
    heard = markers(items["rms: wait"], RULES)
    assert heard[:2] == [Marker.HOLD, Marker.START], heard
