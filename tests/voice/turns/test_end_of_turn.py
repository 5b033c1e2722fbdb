"""The end-of-turn model (voice.turns.end_of_turn): Pipecat's smart-turn v3.2 from the pipecat-ai wheel,
its features computed here as Pipecat computes them; with local detection a finished sentence ends
the turn soon after its last word, and a 1.2 s pause in the middle of one does not. Through the real Silero VAD and model; then through PulseAudio and
the Live emulator driven by the real SDK, the model on its worker thread."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path

import numpy as np
import pytest

from parla.voice.audio.devices import Microphone, Speaker
from parla.voice.config import VoiceConfig
from parla.voice.turns.end_of_turn import EndOfTurn, EndRules, log_mel, smart_turn
from parla.voice.turns.floor import FRAME_BYTES, FRAME_S, Floor, FloorRules, Marker
from tests.conftest import eventually
from tests.peers.live_emulator import LiveConnection, tone
from tests.peers.pulse import speech
from tests.voice.live.test_live import conversation, new_chat
from tests.voice.turns.test_floor import local, spoken

pytestmark = pytest.mark.tier("fast")

RATE = 16_000
FINISHED = "I'd like to book the hotel near the river"
FIRST, SECOND = "I'd like to book", "the hotel near the river"


def clip(text: str, voice: str = "slt") -> np.ndarray:
    return np.frombuffer(speech(text, voice, pad_ms=200), "<i2")


@pytest.fixture(scope="module")
def model():
    return smart_turn()


def pipecats_features():
    """Pipecat's own numpy implementation of the features, loaded from its file (numpy only: the
    package is installed without the dependencies its other modules import)."""
    spec = importlib.util.find_spec("pipecat")
    assert spec is not None and spec.submodule_search_locations
    path = Path(next(iter(spec.submodule_search_locations)), "audio", "turn", "smart_turn", "_whisper_features.py")
    module_spec = importlib.util.spec_from_file_location("pipecat_whisper_features", path)
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module.compute_whisper_log_mel_features


def test_the_features_are_pipecats():
    theirs = pipecats_features()
    for audio in (clip(FIRST, "awb"), clip(FINISHED, "rms"), np.tile(clip(FINISHED), 4)):  # the last one past 8 s
        x = audio.astype(np.float32) / 32768
        assert np.allclose(log_mel(x), theirs(x), atol=1e-5)


def test_the_model_tells_this_half_sentence_from_the_whole_one(model):
    half, whole = model(clip(FIRST)), model(clip(FINISHED))
    assert half < 0.5 < whole, f"half {half:.2f}, whole {whole:.2f}"
    # It hears the last 8 s: what came before does not count.
    assert model(np.concatenate([clip(FIRST), np.tile(clip(FINISHED), 4)])) == pytest.approx(
        model(np.tile(clip(FINISHED), 4)[-8 * RATE :]), abs=1e-6
    )


def at_once(question: Callable[[], float]) -> Future[float]:
    """The answer on this thread, so that a replay faster than speech hears it at the next frame."""
    done: Future[float] = Future()
    done.set_result(question())
    return done


def turn_ends(pcm: np.ndarray, model, **settings) -> list[float]:
    """Feed the audio to the floor frame by frame, the model answering at once: when each turn ends."""
    config = VoiceConfig(turn_detection="local", **{"floor_end_model": "smart-turn", **settings})
    end = EndOfTurn(EndRules.of(config), model, submit=at_once) if config.floor_end_model != "none" else None
    floor = Floor(FloorRules.of(config), end_of_turn=end)
    data = pcm.astype("<i2").tobytes()
    ends = []
    for i in range(len(data) // FRAME_BYTES):
        if Marker.END in floor.feed(data[i * FRAME_BYTES : (i + 1) * FRAME_BYTES], model_speaking=False):
            ends.append((i + 1) * FRAME_S)
    return ends


def test_a_finished_sentence_ends_its_turn_well_before_the_silence_window(model):
    said = np.frombuffer(bytes(RATE) + spoken(FINISHED) + bytes(RATE * 2 * 3), "<i2")
    last_word = 0.5 + len(spoken(FINISHED)) / 2 / RATE
    (end,) = turn_ends(said, model)
    assert end - last_word < 0.6, f"the turn ended {end - last_word:.2f} s after the last word"
    (end,) = turn_ends(said, model, floor_end_model="none")
    assert end - last_word >= 1.5, "without the model the silence window ends the turn"


def test_a_pause_in_the_middle_of_a_sentence_does_not_end_the_turn(model):
    first, second = spoken(FIRST), spoken(SECOND)
    said = np.frombuffer(bytes(RATE) + first + bytes(int(RATE * 2 * 1.2)) + second + bytes(RATE * 2 * 3), "<i2")
    last_word = (RATE + len(first) + int(RATE * 2 * 1.2) + len(second)) / 2 / RATE
    (end,) = turn_ends(said, model)
    assert end > last_word, "the turn ended in the pause"


@pytest.mark.tier("process")
def test_without_the_package_turns_end_by_silence_and_the_log_says_so(tmp_path: Path):
    # A `pipecat` package without the model's file first on the path.
    (tmp_path / "pipecat").mkdir()
    (tmp_path / "pipecat" / "__init__.py").write_text("")
    code = textwrap.dedent(
        """
        import logging
        from parla.voice.config import VoiceConfig
        from parla.voice.turns.floor import local_floor
        logging.basicConfig(level=logging.WARNING, format="%(message)s")
        print(local_floor(VoiceConfig(turn_detection="local", floor_end_model="smart-turn")).end_of_turn)
        """
    )
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert done.stdout.strip() == "None"
    assert "turns end after 1500 ms of silence" in done.stderr and "pipecat-ai" in done.stderr


async def _one_turn(pulse, live, live_client, voice_config, store, said: bytes, **settings) -> list[tuple[str, float]]:
    """Play `said` into the microphone with local detection; the activity markers the emulator got
    ("start" / "end", when each arrived)."""
    chat = await new_chat(store)
    heard: list[bytes] = []

    async def script(conn: LiveConnection) -> None:
        await conn.complete_setup()
        heard.append(await conn.utterance(timeout=20))
        await conn.reply("Which dates?", tone(0.2))
        await conn.closed.wait()

    live.script = script
    async with (
        Microphone() as mic,
        Speaker() as speaker,
        conversation(live_client, local(voice_config, **settings), store, chat.id, microphone=mic, speaker=speaker),
    ):
        await pulse.play_into_mic(said)
        await eventually(lambda: heard, timeout=15, what="the user's turn")
        await asyncio.sleep(0.5)
    return live.connections[0].activity


@pytest.mark.tier("audio")
async def test_through_the_emulator_a_finished_sentence_ends_its_turn_soon(
    pulse, live, live_client, voice_config, store
):
    # The silence window at 4 s: a turn that ends sooner was ended by the model (on its thread).
    sentence = spoken(FINISHED)
    said = bytes(RATE * 2 * 3 // 10) + sentence + bytes(RATE * 2 * 5)
    activity = await _one_turn(
        pulse, live, live_client, voice_config, store, said, floor_end_model="smart-turn", floor_end_silence_ms=4000
    )
    assert [kind for kind, _ in activity] == ["start", "end"]
    span = activity[1][1] - activity[0][1]
    # Silence alone would end it 4.1 s after the last word; the model, 0.3 s plus its time on a busy machine.
    assert span < len(sentence) / 2 / RATE + 3.0, f"a finished sentence's turn lasted {span:.2f} s"


@pytest.mark.tier("audio")
async def test_through_the_emulator_a_paused_sentence_stays_one_turn(pulse, live, live_client, voice_config, store):
    first, second = spoken(FIRST), spoken(SECOND)
    said = bytes(RATE * 2 * 3 // 10) + first + bytes(int(RATE * 2 * 1.2)) + second + bytes(RATE * 2 * 3)
    activity = await _one_turn(pulse, live, live_client, voice_config, store, said, floor_end_model="smart-turn")
    assert [kind for kind, _ in activity] == ["start", "end"], "the pause ended the turn"
    span = activity[1][1] - activity[0][1]
    assert span > (len(first) + len(second)) / 2 / RATE + 1.2, "the turn did not hold the whole sentence"


def test_asked_again_as_the_silence_grows_the_model_can_end_the_turn_later_in_the_pause():
    """PARLA_FLOOR_END_RECHECK_MS: after a "not finished", the model is asked again every so much
    more silence, until the silence window; 0 asks once per pause. The answers here are scripted
    (the first "not finished", the next ones "finished") to see when each question comes."""
    said = np.frombuffer(bytes(RATE) + spoken(FINISHED) + bytes(RATE * 2 * 3), "<i2")
    last_word = 0.5 + len(spoken(FINISHED)) / 2 / RATE

    def scripted(asked: list[int]):
        def answer(audio: np.ndarray) -> float:
            asked.append(len(audio))
            return 0.2 if len(asked) == 1 else 0.9

        return answer

    once: list[int] = []
    (end,) = turn_ends(said, scripted(once))
    assert len(once) == 1 and end - last_word >= 1.5, "asked once, the silence window ends the turn"
    again: list[int] = []
    (end,) = turn_ends(said, scripted(again), floor_end_recheck_ms=300)
    assert len(again) == 2, f"asked {len(again)} times"
    # The second question hears 300 ms (and a frame) more of the silence than the first.
    assert 0.3 <= (again[1] - again[0]) / RATE <= 0.3 + FRAME_S + 1e-9
    assert end - last_word < 1.0, f"the turn ended {end - last_word:.2f} s after the last word"


def test_the_models_answer_ends_the_turn_at_the_next_microphone_block_not_the_next_frame():
    """Silero judges 32 ms frames, the microphone gives 20 ms blocks: an answer that comes between
    two frames ends the turn at the block it came before, not a frame later."""
    config = VoiceConfig(turn_detection="local", floor_end_model="smart-turn")
    asked: list[Future[float]] = []

    def later(question: Callable[[], float]) -> Future[float]:
        asked.append(Future())
        return asked[-1]

    floor = Floor(FloorRules.of(config), end_of_turn=EndOfTurn(EndRules.of(config), lambda audio: 1.0, submit=later))
    data = bytes(RATE) + spoken(FINISHED) + bytes(RATE * 2 * 3)
    block = 320 * 2  # 20 ms
    at = 0
    while not asked:
        assert Marker.END not in floor.feed(data[at : at + block], model_speaking=False)
        at += block
    asked[0].set_result(0.9)
    # One sample more: 20 ms blocks leave a multiple of 64 samples short of a frame, so it completes none.
    assert Marker.END in floor.feed(data[at : at + 2], model_speaking=False)
