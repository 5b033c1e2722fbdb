"""The voice of reminders, heard on the virtual speaker: with a key, Parla's own voice (the speech
model in the Live session's voice, through the real SDK and the Gemini REST emulator, which answers
with real speech); the offline command when the model does not answer in time, or when the settings
keep the words on this machine. Each reminder is marked said only once its words were played."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest

from parla.records.reminder import Reminder
from parla.records.turn import utcnow
from tests.conftest import eventually
from tests.daemon.conftest import running
from tests.peers.gemini_speech import spoken_pcm

pytestmark = pytest.mark.tier("audio")

WORDS = "Reminder: call my sister"


async def _said(settings, recorder=None) -> Reminder:
    """A reminder due in a second, said by the daemon to its end."""
    async with running(settings) as (_, mem, _chat):
        await mem.store.add_reminder(Reminder(text="call my sister", due_at=utcnow() + timedelta(seconds=1)))
        mem.reminder_wake.set()

        async def said() -> Reminder | None:
            (reminder,) = await mem.store.list_reminders(history=True)
            return reminder if reminder.said_at is not None else None

        return await eventually(said, timeout=20, what="the reminder said to its end")


def _heard(recorder, pcm: bytes) -> bool:
    """Whether any of the 100 ms pieces at each tenth of `pcm` was played as it is (the virtual speaker is
    bit-exact; pieces, because on a starved machine an underrun puts a gap in what was played)."""
    played = recorder.audio
    for start in range(len(pcm) // 10 // 2 * 2, len(pcm) - 4800, len(pcm) // 10 // 2 * 2):
        piece = pcm[start : start + 4800]
        found = played.find(piece)
        while found >= 0 and found % 2:
            found = played.find(piece, found + 1)
        if found >= 0:
            return True
    return False


async def test_with_a_key_a_reminder_is_said_in_the_live_voice(daemon_settings, gemini, pulse):
    """It was said by flite's voice while Parla otherwise speaks with the Live model's."""
    settings = daemon_settings.model_copy(update={"live_voice": "Kore"})
    recorder = pulse.record_speaker()
    try:
        said = await _said(settings)
    finally:
        recorder.stop()
    (request,) = gemini.speech_requests()
    assert request.path.endswith("/models/gemini-3.8-flash-lite-tts:generateContent")
    assert request.body["generationConfig"]["speechConfig"]["voice_config"]["prebuilt_voice_config"] == {
        "voice_name": "Kore"
    }
    assert request.body["contents"][0]["parts"] == [{"text": WORDS}]
    assert _heard(recorder, spoken_pcm(WORDS, "Kore")), "the model's audio was not played"
    assert said.said_at is not None and said.fired_at is not None


async def test_a_speech_model_that_does_not_answer_leaves_the_words_to_flite(daemon_settings, gemini, pulse, caplog):
    caplog.set_level(logging.INFO)
    gemini.hang_s = 3.0
    settings = daemon_settings.model_copy(update={"speech_timeout_s": 0.5})
    recorder = pulse.record_speaker()
    try:
        said = await _said(settings)
    finally:
        recorder.stop()
    assert len(gemini.speech_requests()) == 1
    assert not _heard(recorder, spoken_pcm(WORDS, "Puck"))
    assert said.said_at is not None and (said.said_at - said.fired_at).total_seconds() < gemini.hang_s + 3
    messages = [r.getMessage() for r in caplog.records]
    assert any("did not answer within 0.5 s; the offline command flite says the words" in m for m in messages)
    assert any(m.startswith("reminder said by the offline command flite") for m in messages)


async def test_offline_the_words_never_leave_the_machine(daemon_settings, gemini, pulse):
    await _said(daemon_settings.model_copy(update={"reminder_voice": "offline"}))
    assert gemini.speech_requests() == []
