"""The replay under bench.turns and bench.turns_heard: one item of the turn corpus through the floor,
over the answer live (tests/peers/answer_room.py), and what came of it (`Outcome`); the service-like
energy detector the emulator stands in for the service with."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from parla.voice.audio.near_end import NearEnd
from parla.voice.config import VoiceConfig
from parla.voice.turns.floor import Floor, FloorRules, Marker, SpeechProbability
from tests.peers.answer_room import STEP, AnswerInRoom
from tests.peers.live_emulator import VoiceDetector
from tests.peers.turn_corpus import RATE, Item

DEFAULTS = FloorRules.of(VoiceConfig())


def energy() -> SpeechProbability:
    """1 where the emulator's energy detector hears speech in the frame (its threshold over 20 ms
    windows, taken per 32 ms frame), else 0."""
    threshold = VoiceDetector().threshold
    return lambda frame: float(np.sqrt(np.mean(frame.astype(float) ** 2)) > threshold)


@dataclass
class Outcome:
    hold_s: float | None  # the answer paused (or cut at once), from the user's onset
    start_s: float | None  # the floor taken (activityStart): the answer cut, from the onset
    ends: list[float]  # times of activityEnd
    holds: int = 0  # how many times the answer paused
    resumed_before_cut: bool = False  # with words: the answer went on before a request's word cut it
    still_s: float = 0.0  # how long the answer stood paused, in all
    sent_s: float | None = None  # the sound sent to the service as a turn (activityStart), from the onset
    heard: float = 1.0  # the share of the answer heard (see `replay`)


# The service generates an answer this much faster than it plays (the Live emulator's `reply(paced=True)`
# stands in for it so): at activityStart it stops, and what it had sent is all there is to hear.
GENERATION_SPEED = 2.0


def replay(
    item: Item,
    probability: SpeechProbability,
    rules: FloorRules,
    near_end: bool = False,
    transcript_lag_s: float = 0.0,
) -> Outcome:
    """The item through a Floor. Over an answer it runs live (tests.peers.answer_room): a hold
    pauses the answer on the speaker, a release resumes it, the floor taken stops it, and the
    canceller hears what was really played (and, with `near_end`, judges the microphone against the
    echo expected, as Parla's canceller does). Without an answer the item's signal is fed as made.

    With `rules.words`, the floor taken only keeps the answer paused; the transcript of the sound
    (`item.said`: what a recogniser that hears it right writes, the TV's words included) reaches
    the floor `transcript_lag_s` after the sound ends, all at once, and a request's word cuts the
    answer then. The whole answer counts as already sent (the service generates faster than it is
    played), so a released answer goes on to its end; but the service stops generating at activityStart,
    so `heard` counts only what it had sent by then (GENERATION_SPEED), or what was played when the
    answer was cut."""
    floor = Floor(rules, probability=probability)
    hold = start = None
    words_at = item.end_s + transcript_lag_s
    holds = 0
    released = False  # with words: the answer went on after the floor was taken, before a cut
    taken = False
    paused_at: float | None = None
    still = 0.0
    sent: float | None = None
    heard = 1.0
    ends: list[float] = []
    room = AnswerInRoom(item, near_end=NearEnd.of(VoiceConfig()) if near_end else None) if item.model_speaking else None
    if item.question is not None:  # the user asked first: the floor learns how loud they are
        asked = item.question.astype("<i2").tobytes()
        for i in range(0, len(asked) - STEP * 2 + 1, STEP * 2):
            floor.feed(asked[i : i + STEP * 2], False)
    pcm = item.mic.astype("<i2").tobytes()
    blocks = room.blocks() if room else (pcm[i : i + STEP * 2] for i in range(0, len(pcm) - STEP * 2 + 1, STEP * 2))
    now = 0.0
    for block in blocks:
        now += len(block) / 2 / RATE
        said: list[bytes | Marker] = []
        if rules.words and floor.deciding and now >= words_at:
            said, words_at = list(floor.heard(item.said)), float("inf")
        for out in said + floor.feed(block, room.model_speaking if room else False):
            if out is Marker.HOLD:
                holds += 1
                # The first pause from the user's sound on (one before it, for the echo, went on).
                if hold is None or (hold < item.onset_s and start is None):
                    hold = now
                paused_at = now
                if room:
                    room.pause()
            elif out is Marker.RELEASE and room:
                room.resume()
                released = released or (taken and start is None)
                still += now - (paused_at or now)
            elif out is Marker.START:
                taken = True
                if room and sent is None:
                    sent = now
                    heard = min(1.0, GENERATION_SPEED * room.t / len(room.answer))
            elif out is Marker.END:
                ends.append(now)
            if start is None and (out is Marker.CUT or (out is Marker.START and not (rules.words and room))):
                start = now  # the answer cut: by the floor taken, or with words by a request's word
                if room:
                    heard = room.heard_share()
        if start is not None and room:
            break  # the service cuts the answer here: what follows is another story
    # To the 10 ms step (the clock is a sum of float steps: 0.3 came out as 0.30000000000000014).
    rel = lambda t: None if t is None else round(t - item.onset_s, 3)
    cut_late = rules.words and released and start is not None
    hold_s = rel(hold if hold is not None else start)
    return Outcome(hold_s, rel(start), ends, holds, cut_late, still, rel(sent), heard)


SOUND_KINDS = ("backchannel", "cough", "knock", "typing", "TV")


def sound_kind(label: str) -> str:
    """What a not-a-turn item is, from its label ("slt: okay", "knock 1", "TV 0")."""
    return "backchannel" if ":" in label else label.split()[0]
