"""Reminders said by the daemon at their time, heard on the virtual speaker: a cue, then speech,
with no conversation open; within 1 s of the due time; once, by the device whose turn it is."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from google import genai
from google.genai import types

from parla.daemon.reminders import ReminderScheduler, say_aloud
from parla.memory.store.sqlite.store import SQLiteChatStore
from parla.records.reminder import Reminder
from parla.records.turn import utcnow
from parla.voice.audio.devices import Speaker
from parla.voice.audio.speech import Speech
from parla.voice.audio.speech_model import SpeechModel
from tests.conftest import eventually
from tests.daemon.conftest import running
from tests.daemon.test_daemon import ctl

pytestmark = pytest.mark.tier("audio")

LOUD = 200  # int16 amplitude above the virtual devices' silence


def sounds(recorder) -> list[float]:
    """The arrival times of the recording's loud 5 ms pieces."""
    return [t for t, piece in recorder.chunks if np.abs(np.frombuffer(piece, "<i2")).max(initial=0) > LOUD]


def monotonic_of(moment: datetime) -> float:
    return time.monotonic() + (moment - utcnow()).total_seconds()


async def heard_after(recorder, start: float, seconds: float, timeout: float = 15.0) -> list[float]:
    """The loud pieces from `start` on, once at least `seconds` of sound were heard after it."""

    def enough() -> bool:
        loud = [t for t in sounds(recorder) if t >= start - 0.2]
        return len(loud) * 0.005 >= seconds

    await eventually(enough, timeout=timeout, what=f"{seconds} s of sound on the speaker")
    return [t for t in sounds(recorder) if t >= start - 0.2]


async def test_a_reminder_is_said_within_a_second_with_no_conversation_open(daemon_settings, pulse):
    settings = daemon_settings.model_copy(update={"device_name": "laptop"})
    recorder = pulse.record_speaker()
    try:
        async with running(settings) as (daemon, mem, chat_id):
            assert daemon.status.state == "idle"
            due = utcnow() + timedelta(seconds=3)
            reminder = Reminder(text="call my sister", due_at=due, chat_id=chat_id, device="laptop")
            await mem.store.add_reminder(reminder)
            await ctl(settings, "reminders")  # as `parla reminders add` does
            due_at = monotonic_of(due)
            loud = await heard_after(recorder, due_at, seconds=1.0)
            (stored,) = await mem.store.list_reminders(history=True)
            status = await ctl(settings, "status")
    finally:
        recorder.stop()
    first = loud[0]
    assert due_at - 0.05 <= first <= due_at + 1.0, f"first sound {first - due_at:+.3f} s from the due time"
    assert loud[-1] - first > 1.0  # the cue (0.15 s) and then the words
    assert stored.state == "fired" and stored.claimed_by == "laptop"
    assert status["reminders_said"] == 1 and status["state"] == "idle"


async def test_a_reminder_set_on_another_device_waits_for_the_handoff(daemon_settings, pulse):
    settings = daemon_settings.model_copy(update={"device_name": "desktop", "reminder_handoff_s": 2.0})
    async with running(settings) as (daemon, mem, _):
        due = utcnow() + timedelta(seconds=1)
        await mem.store.add_reminder(Reminder(text="from the laptop", due_at=due, device="laptop"))
        mem.reminder_wake.set()
        await asyncio.sleep(2.0)  # due a second ago: still the laptop's turn
        assert [r.state for r in await mem.store.list_reminders(history=True)] == ["pending"]

        async def said() -> bool:
            return [r.claimed_by for r in await mem.store.list_reminders(history=True)] == ["desktop"]

        await eventually(said, timeout=3, what="the desktop to take the reminder over")
        assert daemon.reminders is not None and daemon.reminders.said == 1


async def test_a_timer_set_by_the_live_model_is_said_while_the_session_is_open(daemon_settings, live, pulse):
    """Through the Live emulator and the real SDK: the model calls set_timer in the daemon's session;
    the timer is kept in the session's chat and said at its time with the conversation still open."""
    settings = daemon_settings.model_copy(update={"idle_timeout": 30.0, "device_name": "laptop"})
    answers: list[dict] = []

    async def script(conn):
        await conn.complete_setup()
        await conn.tool_call(
            {"id": "t1", "name": "set_timer", "args": {"duration": "3 seconds", "label": "the tea is ready"}}
        )
        answers.append((await conn.expect("tool_response")).body["function_responses"][0]["response"])
        await conn.closed.wait()

    live.script = script
    recorder = pulse.record_speaker()
    try:
        async with running(settings) as (daemon, mem, chat_id):
            assert (await ctl(settings, "talk"))["result"] == "activating"
            await eventually(lambda: answers, timeout=15, what="the model's set_timer call answered")
            (timer,) = await mem.store.list_reminders()
            due = monotonic_of(timer.due_at)
            loud = await heard_after(recorder, due, seconds=0.8)
            (said,) = await mem.store.list_reminders(history=True)
            assert daemon.status.state == "active"
    finally:
        recorder.stop()
    assert answers[0]["result"] == "set" and answers[0]["text"] == "the tea is ready" and answers[0]["kind"] == "timer"
    assert timer.chat_id == chat_id and timer.device == "laptop"
    assert said.state == "fired" and said.fired_at is not None
    assert (said.fired_at - said.due_at).total_seconds() <= 1.0
    assert due - 0.05 <= loud[0] <= due + 1.0


@pytest.mark.tier("fast")
async def test_reminders_due_together_are_all_claimed_at_their_time_then_said_in_turn(tmp_path):
    """The scheduler on a real store, with words that take 1.5 s to say: the second reminder due at
    the same moment is claimed at its time, not after the first one's words."""
    said: list[str] = []

    async def say(reminder: Reminder, words: str) -> None:
        said.append(words)
        await asyncio.sleep(1.5)

    async with SQLiteChatStore(tmp_path / "parla.db") as store:
        due = utcnow() + timedelta(seconds=1)
        for text in ("first", "second", "third"):
            await store.add_reminder(Reminder(text=text, due_at=due, device="laptop"))
        async with ReminderScheduler(store, "laptop", say, asyncio.Event(), handoff_s=10, takeover_s=300, recheck_s=60):
            await eventually(lambda: len(said) == 3, timeout=10, what="all three said")
        stored = await store.list_reminders(history=True)
    assert sorted(said) == ["Reminder: first", "Reminder: second", "Reminder: third"]
    assert all(r.fired_at is not None and (r.fired_at - r.due_at).total_seconds() <= 1.0 for r in stored)


@pytest.mark.parametrize("when", ["making the words", "waiting for the speech model", "saying them"])
async def test_a_reminder_cut_off_by_a_stop_ends_at_once_with_the_speaker_closed(pulse, gemini, tmp_path, when):
    """A stop (the task cancelled) while the words were being made: the cleanup read words never
    made and raised UnboundLocalError, which hid the cancellation, so the scheduler went on and the
    daemon's stop waited out its 10 s shutdown limit. While they were said: the wait for the
    speaker to drain went on in its thread after the speaker was closed, and the daemon's process
    ended only when that wait timed out (seconds after "Parla stopped")."""
    speaker = Speaker()
    pid_file = tmp_path / "speech.pid"
    making = f"sh -c 'echo $$ > {pid_file}; exec sleep 30'"  # words that never come
    command = making if when == "making the words" else "flite -voice slt -f {text_file} -o {wav}"
    model = None
    if when == "waiting for the speech model":
        gemini.hang_s = 2.0
        client = genai.Client(api_key=gemini.api_key, http_options=types.HttpOptions(base_url=gemini.base_url))
        model = SpeechModel(client, "gemini-3.8-flash-lite-tts", "Puck")
    words = "Reminder: call my sister about the trip to Japan in April, and book the train early."
    saying = asyncio.create_task(say_aloud(speaker, words, Speech(command, model, timeout_s=30), lambda: False))
    if when == "making the words":
        await eventually(pid_file.exists, what="the speech command started")
    elif when == "waiting for the speech model":
        await eventually(gemini.speech_requests, what="the speech model asked")
    else:
        await eventually(lambda: speaker.ahead_s() > 2.0, what="the words queued")
    saying.cancel()
    with pytest.raises(asyncio.CancelledError):
        await saying
    assert not speaker.is_open and not speaker.queued()  # nothing left for a thread to wait on
    if when == "making the words":  # the speech command ended with the saying, and reaped
        assert not Path(f"/proc/{int(pid_file.read_text())}").exists()


async def test_a_stop_that_comes_as_the_scheduler_is_woken_ends_it(tmp_path):
    """A reminder set (the wake) in the same moment as the daemon stops (the cancel): the stop ends
    the scheduler. With `asyncio.wait_for` around the wait, Python 3.11 let the finished wait win,
    lost the cancellation, and the daemon's stop waited on the scheduler for good."""

    async def say(reminder: Reminder, words: str) -> None:
        pass

    wake = asyncio.Event()
    async with SQLiteChatStore(tmp_path / "parla.db") as store:
        for _ in range(3):
            scheduler = ReminderScheduler(store, "laptop", say, wake, handoff_s=10, takeover_s=300, recheck_s=60)
            await scheduler.__aenter__()
            await asyncio.sleep(0.3)  # it has read the (empty) store and waits
            wake.set()
            async with asyncio.timeout(5):
                await scheduler.__aexit__(None, None, None)
