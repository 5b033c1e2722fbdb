"""The floor's words rule with the real Silero model on flite speech (no sound server): a sound
over the answer long enough to go to the service keeps the answer paused until its transcript
says; a backchannel or no words lets it go on after the words wait, a request's word cuts it,
even one that comes after the answer went on."""

from __future__ import annotations

import dataclasses

import pytest

from parla.voice.config import VoiceConfig
from parla.voice.turns.floor import FRAME_BYTES, Floor, FloorRules, Marker
from tests.peers.pulse import speech

pytestmark = pytest.mark.tier("fast")

RULES = dataclasses.replace(FloorRules.of(VoiceConfig()), words=True)


def over_the_answer(floor: Floor, text: str) -> list[bytes | Marker]:
    """`text` spoken over a playing answer, then 0.2 s of quiet; the floor's markers."""
    pcm = speech(text, "slt", pad_ms=0) + bytes(int(0.2 * 16_000) * 2)
    out: list[bytes | Marker] = []
    for i in range(0, len(pcm) - FRAME_BYTES + 1, FRAME_BYTES):
        out += floor.feed(pcm[i : i + FRAME_BYTES], model_speaking=True)
    return [m for m in out if isinstance(m, Marker)]


def quiet(floor: Floor, ms: int) -> list[Marker]:
    out: list[bytes | Marker] = []
    for _ in range(ms * 16 // 512):
        out += floor.feed(bytes(FRAME_BYTES), model_speaking=True)
    return [m for m in out if isinstance(m, Marker)]


def test_a_backchannel_keeps_the_answer_and_a_request_cuts_it():
    floor = Floor(RULES)
    assert over_the_answer(floor, "mm-hmm") == [Marker.HOLD, Marker.START], "the sound did not go to the service"
    assert floor.deciding and floor.holding
    # Its words come while the user is quiet: the answer goes on then, not after the words wait.
    assert floor.heard(" Mm-hmm.") == [Marker.RELEASE], "the answer did not go on at the backchannel's words"
    assert not floor.holding and floor.deciding
    assert quiet(floor, RULES.words_wait_ms) == []
    # A word that comes after the answer went on still cuts it.
    assert floor.heard(" stop") == [Marker.CUT]
    assert not floor.deciding


def test_a_backchannel_heard_while_the_user_still_talks_waits_for_the_quiet():
    floor = Floor(RULES)
    pcm = speech("mm-hmm", "slt", pad_ms=0)
    out: list[bytes | Marker] = []
    for i in range(0, len(pcm) - FRAME_BYTES + 1, FRAME_BYTES):
        out += floor.feed(pcm[i : i + FRAME_BYTES], model_speaking=True)
        if Marker.START in out and floor.quiet_ms == 0:
            break
    assert floor.deciding and floor.quiet_ms == 0
    assert floor.heard(" Mm-hmm.") == [], "the answer went on over the user"
    assert quiet(floor, RULES.words_wait_ms + 64) == [Marker.RELEASE]


def test_a_request_cuts_the_answer_at_its_words():
    floor = Floor(RULES)
    assert over_the_answer(floor, "stop") == [Marker.HOLD, Marker.START]
    assert floor.heard("Stop.") == [Marker.CUT]
    assert quiet(floor, RULES.end_silence_ms)[-1:] == [Marker.END], "the user's turn did not end"


def test_a_sound_without_words_lets_the_answer_go_on_and_ends_as_a_turn():
    floor = Floor(RULES)
    assert over_the_answer(floor, "okay")[:2] == [Marker.HOLD, Marker.START]
    assert quiet(floor, RULES.end_silence_ms) == [Marker.RELEASE, Marker.END]
    assert not floor.deciding and floor.heard("stop") == [], "words after the turn ended cut an answer"


def test_without_words_the_barge_in_window_alone_decides():
    floor = Floor(dataclasses.replace(RULES, words=False))
    assert over_the_answer(floor, "mm-hmm") == [Marker.HOLD, Marker.START, Marker.CUT]
    assert not floor.deciding and floor.heard("mm-hmm") == []


def test_backchannels_are_words_not_substrings():
    assert not RULES.is_request("Mm-hmm. Yeah, okay, right.")
    assert not RULES.is_request("")
    assert RULES.is_request("okay stop")
    assert RULES.is_request("uh, what about the trains")
    assert all(RULES.is_request(w) for w in ("wait", "no", "stop", "itself"))
