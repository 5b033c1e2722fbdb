"""A turn-taking corpus made here: flite voices in simulated rooms (pyroomacoustics image-source
impulse responses, RT60 0.3-0.8 s, the laptop speaker 30 cm from the microphone and as loud at it
as the user), with the model's answer coming back through the room and WebRTC's echo canceller
(Parla's engine) in front of the detectors, as on a laptop with the answer on its speakers.

Four sets of 20 items each:
- "interruption": the user talks over the answer ("wait", "stop", "no, the other one", a new
  question...); it should cut the answer, soon.
- "not_a_turn": backchannels ("mm-hmm", "yeah", "okay", "right"), a cough, a knock, typing, and TV
  speech 15 dB below the user, over the answer; none should cut it.
- "hesitation": a sentence with a 1.0-1.5 s hesitation in the middle, the model silent; the user's
  turn must not end in the pause, and should end soon after the last word. The sentence is ONE
  flite utterance, cut at the word boundary (flite's segment timings) with the silence put there,
  so the first half ends as a sentence that goes on ends, not with a final fall; its last syllable
  is drawn out, as before a hesitation.
- "pause": the same sentences, rooms and pauses, with each half synthesised as an utterance of its
  own: the first half ends with flite's sentence-final contour, a complete-sounding clause and then
  silence. Harder than a hesitation (an end-of-turn model is trained to hear that fall as an end),
  and kept so that it stays measured.

Each item's signal is the microphone after echo cancellation, 16 kHz int16, with the time the
user's sound starts (`onset_s`) and, for "hesitation" and "pause", when the sentence's last word ends (`end_s`) and
where the pause is (`pause_s`). Noises are synthesised (seeded), never recorded.
"""

from __future__ import annotations

import subprocess
import tempfile
import wave
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tests.peers.pulse import speech

RATE = 16_000
USER_RMS = 1000.0  # about -30 dBFS at the microphone
VOICES = ("kal16", "slt", "awb", "rms")
ANSWER = (
    "Sure. Kyoto in April is lovely: the cherry blossoms are out, the temples are busy, and you "
    "should book the ryokan early because it fills up weeks ahead, especially near the river."
)
INTERRUPTIONS = ("wait", "stop", "no, the other one", "what about the trains instead", "hold on a second")
BACKCHANNELS = ("mm-hmm", "yeah", "okay", "right")
TV = ("and in other news tonight the council voted to close the bridge", "the forecast for tomorrow is rain")
PAUSED = (
    ("I'd like to book", "the hotel near the river"),
    ("can you remind me", "to call my sister tomorrow"),
    ("what was the name of", "that restaurant we liked"),
    ("play something", "a bit more relaxing please"),
    ("how long does it take", "to get to the airport by train"),
)
ONSET_S = 1.5  # the user's sound starts this long into the answer
QUESTION = "what is Kyoto like in April"
# A hesitation draws out the syllable before it; this much, moderately (on bench.turns_probe's set,
# smart-turn's answers in the pause barely move between 1.0 and 2.0).
DRAWN_OUT = 1.5


@dataclass(frozen=True)
class Item:
    kind: str  # "interruption", "not_a_turn", "hesitation", "pause"
    label: str
    mic: np.ndarray  # int16 at 16 kHz, after echo cancellation
    onset_s: float
    end_s: float  # when the user's sound ends (the last word, for "hesitation" and "pause")
    model_speaking: bool
    pause_s: tuple[float, float] = (0.0, 0.0)
    # The words in the sound (the TV's too), as a recogniser that hears them right writes them;
    # "" for a cough, a knock or typing.
    said: str = ""
    # Over an answer, the parts the microphone signal was made of, so that a replay can pause the
    # answer where a detector paused the speaker (the room then stops echoing it): the user's
    # sound as it reaches the microphone, the answer as played (16 kHz), and the speaker-to-
    # microphone impulse response scaled to the echo's level.
    user: np.ndarray | None = None
    answer: np.ndarray | None = None
    echo_path: np.ndarray | None = None
    # A speaker that distorts: the played signal through tanh at this drive before the room (0: linear).
    drive: float = 0.0
    # The user's question before the answer, in the user's room at the user's level, with the
    # silence that ends its turn: the floor learns how loud the user is from it.
    question: np.ndarray | None = None
    rt60_s: float = 0.0  # the room's reverberation time, as drawn


def _rms(a: np.ndarray) -> float:
    return float(np.sqrt(np.mean(a.astype(float) ** 2))) if len(a) else 0.0


def _trimmed(a: np.ndarray) -> tuple[int, int]:
    """Where the sound in flite's output starts and ends (its pads are near silence)."""
    loud = np.flatnonzero(np.abs(a) > 100)
    return (int(loud[0]), int(loud[-1]) + 1) if len(loud) else (0, len(a))


def _flite(text: str, voice: str) -> np.ndarray:
    """flite's speech without its pads, as float."""
    a = np.frombuffer(speech(text, voice, pad_ms=0), "<i2").astype(float)
    start, end = _trimmed(a)
    return a[start:end]


def _segments(text: str, voice: str, stretch: float = 1.0) -> tuple[np.ndarray, list[tuple[str, float]]]:
    """flite's speech of `text` (float, pads included) and its segments with their end times (s);
    `stretch` makes every segment that much longer (flite's duration_stretch)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "speech.wav"
        done = subprocess.run(
            ["flite", "-voice", voice, "--setf", f"duration_stretch={stretch}", "-psdur", "-t", text, "-o", str(path)],
            check=True,
            capture_output=True,
            text=True,
        )
        with wave.open(str(path)) as w:
            assert w.getframerate() == RATE and w.getsampwidth() == 2 and w.getnchannels() == 1
            a = np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(float)
    segments = [(name, float(end)) for name, end in (s.rsplit(":", 1) for s in done.stdout.split())]
    return a, segments


VOWELS = frozenset(
    ("aa", "ae", "ah", "ao", "aw", "ax", "axr", "ay", "eh", "er", "ey", "ih", "iy", "ow", "oy", "uh", "uw")
)
SPLICE = int(0.005 * RATE)  # a cross-fade where two renderings of the sentence meet


def hesitant(first: str, second: str, voice: str, lengthen: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """The sentence "first second" said once by flite, cut where `first`'s last phone ends: the two
    halves of one utterance, so the first ends with the pitch of a sentence that goes on (flite's
    SSML <break time="..."/> is no help: it gives a 95 ms pause and a phrase boundary, whatever the
    time asked). With `lengthen`, the first half's last vowel and what follows it come from the same
    sentence said that much slower (a hesitation's drawn-out last syllable, same pitch contour)."""
    text = f"{first} {second}"
    whole, segments = _segments(text, voice)
    phones = [name for name, _ in _segments(first, voice)[1] if name != "pau"]
    spoken = [(name, end) for name, end in segments if name != "pau"]
    if [name for name, _ in spoken[: len(phones)]] != phones:
        raise ValueError(f"flite says {first!r} differently inside {text!r} ({voice})")
    last = len(phones) - 1
    start, end = _trimmed(whole)
    cut = round(spoken[last][1] * RATE)
    head = whole[start:cut]
    if lengthen != 1.0:
        # From the start of the last vowel (the end of the phone before it) to the half's end.
        vowel = max(i for i, name in enumerate(phones) if name in VOWELS)
        slow, slow_segments = _segments(text, voice, lengthen)
        slow_ends = [end for name, end in slow_segments if name != "pau"]
        at = round(spoken[vowel - 1][1] * RATE) - start if vowel else 0
        rhyme = slow[round(slow_ends[vowel - 1] * RATE) if vowel else _trimmed(slow)[0] : round(slow_ends[last] * RATE)]
        fade = np.linspace(1.0, 0.0, SPLICE)
        joined = head[at : at + SPLICE] * fade + rhyme[:SPLICE] * (1 - fade)
        head = np.concatenate([head[:at], joined, rhyme[SPLICE:]])
    return head, whole[cut:end]


def _room(
    rng: np.random.Generator, rt60: tuple[float, float] = (0.3, 0.8)
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Impulse responses (16 kHz) of one simulated room: user -> mic, speaker -> mic, far (TV) -> mic;
    its RT60 drawn from the range `rt60`."""
    return _drawn_room(rng, rt60)[0]


def _drawn_room(
    rng: np.random.Generator, rt60: tuple[float, float]
) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray], float]:
    """`_room`'s impulse responses and the RT60 drawn for them."""
    import pyroomacoustics as pra

    dims = [rng.uniform(3.5, 6.0), rng.uniform(3.0, 5.0), 2.7]
    rt60_s = float(rng.uniform(*rt60))
    absorption, order = pra.inverse_sabine(rt60_s, dims)
    room = pra.ShoeBox(dims, fs=RATE, materials=pra.Material(absorption), max_order=min(order, 12))
    mic = np.array([dims[0] / 2, dims[1] / 2, 0.9])
    room.add_source(list(mic + [0.0, 0.8, 0.4]))  # the user, in front of the laptop
    room.add_source(list(mic + [0.3, 0.0, 0.0]))  # the laptop's speaker, 30 cm from its microphone
    room.add_source([dims[0] - 0.5, dims[1] - 0.5, 1.0])  # a TV across the room
    room.add_microphone(list(mic))
    room.compute_rir()
    user, spk, tv = (np.asarray(room.rir[0][i]) for i in range(3))
    return (user, spk, tv), rt60_s


def _place(length: int, sound: np.ndarray, at_s: float) -> np.ndarray:
    out = np.zeros(length)
    start = int(at_s * RATE)
    n = min(len(sound), length - start)
    out[start : start + n] = sound[:n]
    return out


def cancel(near: np.ndarray, far16: np.ndarray) -> np.ndarray:
    """Parla's echo canceller over the microphone, with the answer it played as the reference."""
    from parla.voice.audio.echo import WebRtcEngine

    engine = WebRtcEngine()
    far24 = np.interp(np.arange(int(len(far16) * 1.5)) / 1.5, np.arange(len(far16)), far16)
    near_i = np.clip(near, -32768, 32767).astype("<i2")
    far_i = np.clip(far24, -32768, 32767).astype("<i2")
    out = np.zeros(len(near_i), dtype=np.int16)
    for f in range(len(near_i) // 160):
        n = near_i[f * 160 : (f + 1) * 160].tobytes()
        r = far_i[f * 240 : (f + 1) * 240]
        r = np.pad(r, (0, 240 - len(r))).astype("<i2").tobytes()
        out[f * 160 : (f + 1) * 160] = np.frombuffer(engine.process(n, r), "<i2")
    return out


def cough(rng: np.random.Generator) -> np.ndarray:
    n = int(0.3 * RATE)
    noise = rng.normal(0, 1, n)
    noise = np.convolve(noise, np.ones(4) / 4, "same") - np.convolve(noise, np.ones(40) / 40, "same")
    t = np.arange(n) / RATE
    env = np.minimum(t / 0.01, 1) * np.exp(-t / 0.08)
    return np.concatenate([noise * env, np.zeros(int(0.1 * RATE)), 0.6 * noise * env])


def knock(rng: np.random.Generator) -> np.ndarray:
    t = np.arange(int(0.08 * RATE)) / RATE
    one = (np.sin(2 * np.pi * 180 * t) + 0.5 * np.sin(2 * np.pi * 470 * t)) * np.exp(-t / 0.015)
    gap = np.zeros(int(rng.uniform(0.12, 0.18) * RATE))
    return np.concatenate([one, gap, one, gap, one])


def typing(rng: np.random.Generator) -> np.ndarray:
    out = np.zeros(int(2.0 * RATE))
    at = 0.0
    t = np.arange(int(0.006 * RATE)) / RATE
    while at < 1.95:
        click = rng.normal(0, 1, len(t)) * np.exp(-t / 0.0015)
        i = int(at * RATE)
        out[i : i + len(click)] += click
        at += rng.uniform(0.08, 0.22)
    return out


def _scaled(a: np.ndarray, rms: float) -> np.ndarray:
    return a * rms / max(_rms(a), 1e-9)


def corpus(seed: int = 7, per_set: int = 20) -> Iterator[Item]:
    """The three sets, `per_set` items each (fewer for a quick run), rooms drawn from `seed`."""
    rng = np.random.default_rng(seed)
    answer = {v: _flite(ANSWER, v) for v in ("kal16", "slt")}
    for i in range(per_set):
        phrase, voice = INTERRUPTIONS[i % len(INTERRUPTIONS)], VOICES[i // len(INTERRUPTIONS) % len(VOICES)]
        yield _over_answer(
            rng, "interruption", f"{voice}: {phrase}", _flite(phrase, voice), answer, said=phrase, voice=voice
        )
    others: list[tuple[str, np.ndarray, bool, str, str]] = []
    for voice in VOICES[:3]:
        others += [(f"{voice}: {b}", _flite(b, voice), False, b, voice) for b in BACKCHANNELS]
    for k in range(2):
        user = VOICES[k]  # the user who asked, for the sounds that are not their voice
        others += [(f"cough {k}", cough(rng), False, "", user), (f"knock {k}", knock(rng), False, "", user)]
        others += [
            (f"typing {k}", typing(rng), False, "", user),
            (f"TV {k}", _flite(TV[k], VOICES[2 + k]), True, TV[k], user),
        ]
    for label, sound, far, said, user in others[:per_set]:
        yield _over_answer(rng, "not_a_turn", label, sound, answer, far=far, said=said, voice=user)
    for i in range(per_set):
        (first, second), voice = PAUSED[i % len(PAUSED)], VOICES[i // len(PAUSED) % len(VOICES)]
        label = f"{voice}: {first} ... {second}"
        user_rir, pause = _room(rng)[0], rng.uniform(1.0, 1.5)
        # The same room and pause for both ways of saying it, so that only the first half's end differs.
        yield _in_room("pause", label, _flite(first, voice), _flite(second, voice), user_rir, pause)
        yield _in_room("hesitation", label, *hesitant(first, second, voice, DRAWN_OUT), user_rir, pause)


def _over_answer(
    rng: np.random.Generator,
    kind: str,
    label: str,
    sound: np.ndarray,
    answer: dict[str, np.ndarray],
    far: bool = False,
    said: str = "",
    voice: str = "kal16",
    level_db: float | None = None,
) -> Item:
    user_rir, spk_rir, tv_rir = _room(rng)
    model = answer["kal16" if rng.random() < 0.5 else "slt"]
    length = len(model) + RATE
    # The sound at the mouth, scaled so that the user's voice is USER_RMS at the microphone; the
    # TV 15 dB below that, from across the room (or `level_db` against the user); the answer's echo
    # as loud as the user.
    rir = tv_rir if far else user_rir
    at_mic = np.convolve(sound, rir)
    level = USER_RMS * 10 ** ((level_db if level_db is not None else -15.0 if far else 0.0) / 20)
    at_mic = _scaled(at_mic, level)
    echo_path = spk_rir * USER_RMS / max(_rms(np.convolve(model, spk_rir)[: len(model)]), 1e-9)
    echo = np.convolve(model, echo_path)[: len(model)]
    user = _place(length, at_mic, ONSET_S)
    near = user + _place(length, echo, 0.0)
    mic = cancel(near, np.pad(model, (0, length - len(model))))
    end = ONSET_S + len(sound) / RATE
    question = _question(voice, user_rir)
    return Item(
        kind, label, mic, ONSET_S, end, True, user=user, answer=model, echo_path=echo_path, said=said, question=question
    )


def _question(voice: str, user_rir: np.ndarray) -> np.ndarray:
    """The user's question in their room at their level, then the silence that ends its turn."""
    asked = _scaled(np.convolve(_flite(QUESTION, voice), user_rir), USER_RMS)
    return np.clip(np.concatenate([asked, np.zeros(int(1.8 * RATE))]), -32768, 32767).astype(np.int16)


def _paused(rng: np.random.Generator, label: str, first: np.ndarray, second: np.ndarray) -> Item:
    """Two utterances with silence between them, in a room drawn from `rng`."""
    user_rir = _room(rng)[0]
    return _in_room("pause", label, first, second, user_rir, rng.uniform(1.0, 1.5))


def _in_room(kind: str, label: str, first: np.ndarray, second: np.ndarray, user_rir: np.ndarray, pause: float) -> Item:
    start = 0.5
    said = np.concatenate([first, np.zeros(int(pause * RATE)), second])
    at_mic = _scaled(np.convolve(said, user_rir), USER_RMS)
    length = int((start + len(said) / RATE + 2.5) * RATE)
    mic = np.clip(_place(length, at_mic, start), -32768, 32767).astype(np.int16)
    end = start + len(said) / RATE
    gap = (start + len(first) / RATE, start + len(first) / RATE + pause)
    return Item(kind, label, mic, start, end, model_speaking=False, pause_s=gap)


# The rooms the answer plays in with nobody talking: (name, echo level against the user's in dB,
# the speaker's distortion drive, the RT60 range).
EchoRoom = tuple[str, float, float, tuple[float, float]]
ECHO_ROOMS: tuple[EchoRoom, ...] = (
    ("echo as loud as the user", 0.0, 0.0, (0.2, 0.9)),
    ("echo 10 dB quieter", -10.0, 0.0, (0.2, 0.9)),
    ("loud speaker, echo 6 dB over the user", 6.0, 0.0, (0.2, 0.9)),
    ("distorting speaker", 0.0, 4.0, (0.2, 0.9)),
)


def distorted(a: np.ndarray, drive: float) -> np.ndarray:
    """What a small speaker driven too hard plays: soft clipping (0: as it is)."""
    if not drive:
        return a
    return np.tanh(drive * a / 32768.0) * 32768.0 / drive


def echo_alone(seed: int, per_room: int, rooms: tuple[EchoRoom, ...] = ECHO_ROOMS) -> Iterator[Item]:
    """The answer played with nobody talking, `per_room` times in each kind of room, rooms drawn
    from `seed`: nothing here should pause or cut it."""
    rng = np.random.default_rng(seed)
    answer = {v: _flite(ANSWER, v) for v in ("kal16", "slt")}
    for name, level_db, drive, rt60 in rooms:
        for k in range(per_room):
            (user_rir, spk_rir, _), rt60_s = _drawn_room(rng, rt60)
            voice = "kal16" if rng.random() < 0.5 else "slt"
            model = answer[voice]
            played = distorted(model, drive)
            target = USER_RMS * 10 ** (level_db / 20)
            echo_path = spk_rir * target / max(_rms(np.convolve(played, spk_rir)[: len(model)]), 1e-9)
            length = len(model) + RATE
            yield Item(
                "echo_alone",
                f"{name} {k} ({voice})",
                np.zeros(length, np.int16),
                float(length / RATE),
                float(length / RATE),
                True,
                user=np.zeros(length),
                answer=model,
                echo_path=echo_path,
                drive=drive,
                rt60_s=rt60_s,
                question=_question(voice, user_rir),
            )


def door(rng: np.random.Generator) -> np.ndarray:
    """A door shut across the room: a low thump that rings a little, then the latch's click."""
    n = int(0.4 * RATE)
    t = np.arange(n) / RATE
    noise = rng.normal(0, 1, n)
    low = np.convolve(noise, np.ones(40) / 40, "same")  # mostly under 400 Hz
    thump = low * np.exp(-t / 0.06) + 0.5 * np.sin(2 * np.pi * rng.uniform(70, 110) * t) * np.exp(-t / 0.12)
    click_t = np.arange(int(0.01 * RATE)) / RATE
    click = rng.normal(0, 1, len(click_t)) * np.exp(-click_t / 0.002)
    at = int(rng.uniform(0.05, 0.12) * RATE)
    thump[at : at + len(click)] += 0.8 * click
    return thump


def doors(seed: int, count: int) -> Iterator[Item]:
    """`count` doors over the answer, rooms drawn from their own generator (so the corpus' other
    items keep their rooms): the door from across the room, at the user's level."""
    rng = np.random.default_rng(seed + 1000)
    answer = {v: _flite(ANSWER, v) for v in ("kal16", "slt")}
    for k in range(count):
        yield _over_answer(
            rng, "not_a_turn", f"door {k}", door(rng), answer, far=True, voice=VOICES[k % 4], level_db=0.0
        )
