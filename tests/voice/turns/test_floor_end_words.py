"""The end of the user's turn by the transcript's last word (PARLA_FLOOR_END_WORDS), with the real
Silero model on flite speech (no sound server): a transcript that ends on a word a sentence goes on
after keeps the floor through a pause; one that ends on any other word, come since the user went
quiet, ends the turn soon after the end-of-turn check."""

from __future__ import annotations

import dataclasses

import pytest

from parla.voice.config import VoiceConfig
from parla.voice.turns.floor import FRAME_BYTES, FRAME_S, Floor, FloorRules, Marker
from tests.peers.pulse import speech

pytestmark = pytest.mark.tier("fast")

RULES = dataclasses.replace(FloorRules.of(VoiceConfig()), end_words=True)


def said(floor: Floor, text: str, transcript: str = "") -> list[Marker]:
    """`text` spoken; `transcript` reaches the floor halfway through it."""
    pcm = speech(text, "slt", pad_ms=0)
    out: list[bytes | Marker] = []
    for i in range(0, len(pcm) - FRAME_BYTES + 1, FRAME_BYTES):
        if transcript and i >= len(pcm) // 2:
            floor.heard(transcript)
            transcript = ""
        out += floor.feed(pcm[i : i + FRAME_BYTES], model_speaking=False)
    return [m for m in out if isinstance(m, Marker)]


def quiet_until_end(floor: Floor, ms: int, transcript: str = "", at_ms: int = 300) -> float | None:
    """Up to `ms` of quiet, the transcript coming `at_ms` into it: when the turn ended (ms), if it did."""
    for n in range(int(ms / 1000 / FRAME_S)):
        if transcript and n * FRAME_S * 1000 >= at_ms:
            floor.heard(transcript)
            transcript = ""
        if Marker.END in floor.feed(bytes(FRAME_BYTES), model_speaking=False):
            return (n + 1) * FRAME_S * 1000
    return None


def test_a_last_word_the_sentence_goes_on_after_keeps_the_floor_and_a_finished_one_ends_the_turn():
    floor = Floor(RULES)
    assert said(floor, "can you tell me about") == [Marker.START]
    assert quiet_until_end(floor, 1200, " Can you tell me about") is None, "the turn ended in the pause"
    assert said(floor, "the trains to Kyoto") == []
    ended = quiet_until_end(floor, RULES.end_silence_ms, " the trains to Kyoto?")
    assert ended is not None and ended < 600, f"the finished sentence's turn ended {ended} ms into the quiet"


def test_only_a_transcript_that_came_since_the_user_went_quiet_counts():
    floor = Floor(RULES)
    # A piece that comes while the user still talks may not hold the last word.
    assert said(floor, "book the hotel near the river", " Book the hotel") == [Marker.START]
    # No transcript since the quiet began: the silence window ends the turn (counted here from the
    # zeros fed; Silero's quiet began a little before, in the speech's own fading end).
    ended = quiet_until_end(floor, RULES.end_silence_ms + 100)
    assert ended is not None and ended > RULES.end_silence_ms - 300


def test_without_end_words_the_transcript_does_not_end_the_turn():
    floor = Floor(dataclasses.replace(RULES, end_words=False))
    said(floor, "what time is it")
    ended = quiet_until_end(floor, RULES.end_silence_ms + 100, " What time is it?")
    assert ended is not None and ended > RULES.end_silence_ms - 300


def test_sentences_go_on_after_function_words_and_fillers():
    assert RULES.sentence_goes_on("I'd like to book the") is True
    assert RULES.sentence_goes_on("What was the name of") is True
    assert RULES.sentence_goes_on("Um, I want, uh") is True
    assert RULES.sentence_goes_on("Book the hotel near the river.") is False
    assert RULES.sentence_goes_on("") is None
