"""Microphone and speaker through sounddevice on a headless PulseAudio with virtual devices."""

from __future__ import annotations

import asyncio
import time

import numpy as np
import pytest

from parla.voice.audio.devices import Microphone, Speaker, list_devices, resolve_device
from parla.voice.errors import AudioDeviceError
from tests.peers.live_emulator import tone
from tests.peers.pulse import speech

pytestmark = pytest.mark.tier("audio")


def test_devices_by_name_index_and_default(pulse):
    devices = list_devices()
    assert any(d.name == "default" and d.inputs and d.outputs for d in devices)
    assert resolve_device(None, "input") is None
    pulse_index = next(d.index for d in devices if d.name == "pulse")
    assert resolve_device("pulse", "output") == pulse_index
    assert resolve_device("PULSE", "input") == pulse_index
    assert resolve_device(str(pulse_index), "input") == pulse_index


def test_an_unusable_device_lists_the_devices_that_exist(pulse):
    with pytest.raises(AudioDeviceError) as e:
        resolve_device("USB headset", "input")
    message = str(e.value)
    assert "PARLA_INPUT_DEVICE='USB headset' matches no input devices" in message
    assert "pulse (32 in, 32 out)" in message and "Set PARLA_INPUT_DEVICE" in message
    with pytest.raises(AudioDeviceError, match="PARLA_OUTPUT_DEVICE=99 is not an output device"):
        resolve_device(99, "output")


async def test_microphone_hears_what_is_played_bit_exact_and_in_order(pulse):
    said = speech("the quick brown fox", pad_ms=100)
    async with Microphone(block_ms=20, queue_ms=5000) as mic:
        await pulse.play_into_mic(said)
        blocks = []
        async with asyncio.timeout(5):
            while not any(blocks) or any(blocks[-25:]):  # until 0.5 s of silence after the speech
                block = await mic.read()
                blocks.append(block if any(block) else b"")
    heard = b"".join(b or bytes(640) for b in blocks)
    assert {len(b) for b in blocks if b} == {640}  # 20 ms of 16 kHz int16
    core = said[3200:-3200]  # without the padding's silence
    assert core in heard and mic.dropped == 0


async def test_microphone_queue_is_bounded_and_counts_drops(pulse):
    async with Microphone(block_ms=20, queue_ms=200) as mic:
        await asyncio.sleep(0.6)  # nobody reads: the network "stalls"
        assert mic._queue.qsize() == 10
        assert mic.dropped >= 15 and mic.captured >= 25


async def test_speaker_plays_bit_exact_and_flush_silences_within_50ms(pulse):
    played = tone(2.0, 523.0)
    recorder = pulse.record_speaker()
    await asyncio.sleep(0.2)
    async with Speaker(block_ms=20) as speaker:
        speaker.play(tone(0.3, 330.0))
        assert await speaker.drained(2)
        await asyncio.sleep(0.2)
        speaker.play(played)
        await asyncio.sleep(0.5)
        flushed_at = time.monotonic()
        unplayed = speaker.flush()
        await asyncio.sleep(0.3)
    recorder.stop()
    assert tone(0.3, 330.0) in recorder.audio
    stop_ms = (recorder.last_sound_at() - flushed_at) * 1000
    print(f"speaker silent {stop_ms:.1f} ms after flush")  # a figure (bench.voice), not a bound: it is wall-clock
    assert 1.2 < unplayed / 48_000 < 1.6  # about 1.5 s of the 2 s were never played
    # counted in audio, not on the wall clock: of the flushed clip, only what the speaker had handed
    # to the device before the flush came out, and it came out whole, in order
    heard = _heard_prefix(recorder.audio, played)
    assert 0 < heard <= len(played) - unplayed
    assert speaker.played_bytes + unplayed == len(played) + len(tone(0.3, 330.0))
    heard = np.frombuffer(recorder.audio, "<i2")
    assert np.abs(heard).max() > 7000


def _heard_prefix(recording: bytes, clip: bytes) -> int:
    """How many bytes of `clip`, from its start, the recording holds in one piece."""
    start = recording.find(clip[:960])
    while start >= 0 and start % 2:
        start = recording.find(clip[:960], start + 1)
    if start < 0:
        return 0
    heard = np.frombuffer(recording[start : start + len(clip)], "<i2")
    expected = np.frombuffer(clip[: 2 * len(heard)], "<i2")
    differs = np.flatnonzero(heard != expected)
    return 2 * int(differs[0] if differs.size else len(heard))
