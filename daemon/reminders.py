"""The daemon's reminder scheduler: one task, owned by the daemon (`async with`), that says each
timer and reminder at its time, conversation open or not.

It reads the pending reminders from the store, sleeps until the next one's turn (or until a
reminder is set or cancelled here, `wake`, or `recheck_s` passes, for ones set on other devices and
after the machine slept), then claims each one whose turn has come and says the ones it won. The
claim is atomic in the store, so of several devices of one account exactly one says a reminder;
the device it was set on has its turn at the due time, any other `handoff_s` later (so a reminder
set on a laptop that is closed is still said, by the desktop). A reminder due while the daemon was
stopped has had its turn: it is said at the next start, with the time it was due (when that is a
minute or more ago).

A reminder counts as said once its saying finished: then it is marked said in the store. One
whose saying was cut off (a stop, a kill -9, a power loss) stays claimed by this device and unsaid,
and is said again at the next start (late, with the time it was due), like one due while the
daemon was stopped; a device that does not start again leaves it to the others, which take its
claim up once it is `takeover_s` old. A mark the store did not take is tried again at each read.

A store that fails a read or a claim is asked again `_RETRY_S` later; nothing is said that was not
claimed, and a reminder is said at most once by this process (a claim made in the local copy while
Supabase was away is not said again when the server answers; one whose saying failed, a broken
speaker, is said again at the next start).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from contextlib import suppress
from datetime import datetime, timedelta
from typing import Self

from google import genai

from parla.kernel.local_time import LocalClock, LocalTime, spoken_date
from parla.kernel.tasks import cancel_and_wait
from parla.memory.errors import StoreError, WriteQueued
from parla.memory.store.protocol import ReminderRecords
from parla.records.reminder import Reminder
from parla.voice.audio.cues import cue
from parla.voice.audio.devices import Speaker
from parla.voice.audio.speech import Speech
from parla.voice.audio.speech_model import SpeechModel
from parla.voice.config import SAMPLE_BYTES, SPEAKER_RATE
from parla.voice.errors import SpeechFailed

from .settings import Settings

log = logging.getLogger(__name__)

# said "late" (with the time it was due) past this
_LATE = timedelta(minutes=1)
# a store that failed is asked again this soon: a reminder due meanwhile is late by at most this
_RETRY_S = 5.0

Say = Callable[[Reminder, str], Awaitable[None]]


def words_for(reminder: Reminder, now: LocalTime) -> str:
    """What is said: the reminder, and when it was due (in the user's zone now) if that is a while ago."""
    if now.at - reminder.due_at < _LATE:
        return reminder.spoken()
    due = reminder.due_at.astimezone(now.at.tzinfo)
    day = "" if due.date() == now.at.date() else f"on {spoken_date(due)} "
    return f"{reminder.spoken()}. It was due {day}at {due:%H:%M}."


class ReminderScheduler:
    def __init__(
        self,
        store: ReminderRecords,
        device: str,
        say: Say,
        wake: asyncio.Event,
        *,
        handoff_s: float,
        recheck_s: float,
        takeover_s: float,
        clock: LocalClock | None = None,
    ) -> None:
        self.store = store
        self.device = device
        self._say = say
        self._wake = wake
        self.handoff = timedelta(seconds=handoff_s)
        self.recheck_s = recheck_s
        self.takeover_s = takeover_s
        self.clock = clock or LocalClock()
        self._said: set[str] = set()  # claimed (or taken up again) by this process: never said twice by it
        self._heard: set[str] = set()  # said to the end, the mark not taken by the store yet
        self._task: asyncio.Task[None] | None = None
        self.said = 0  # reminders said by this process

    async def __aenter__(self) -> Self:
        self._task = asyncio.create_task(self._run(), name="reminders")
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None:
            await cancel_and_wait(self._task)
            self._task = None

    def turn_at(self, reminder: Reminder) -> datetime:
        """When this device claims it: at its time if it was set here (or on no device), else
        `handoff` later."""
        mine = reminder.device in (None, self.device)
        return reminder.due_at if mine else reminder.due_at + self.handoff

    async def _run(self) -> None:
        while True:
            self._wake.clear()  # cleared before the read: a reminder set during it wakes the next wait
            try:
                wait = await self.tick()
            except StoreError as e:
                log.warning("reminders not read: %s; trying again", e, extra={"event": "reminders_unread"})
                wait = min(self.recheck_s, _RETRY_S)
            except Exception:  # a bug here must not end the reminders for the daemon's life
                log.exception("the reminder scheduler failed; trying again", extra={"event": "reminders_failed"})
                wait = self.recheck_s
            with suppress(TimeoutError):
                async with asyncio.timeout(wait):  # not wait_for: see parla.kernel.tasks
                    await self._wake.wait()

    async def tick(self) -> float:
        """Say the reminders whose turn has come, then those cut off before (`_unsaid`); the seconds
        until the next turn (at most `recheck_s`). The due ones are all claimed first, then said one
        after the other: a second reminder due with the first is claimed at its time, not after the
        first one's words."""
        pending = [r for r in await self.store.list_reminders() if r.id not in self._said]
        now = self.clock.now_utc()
        claimed = [c for r in pending if self.turn_at(r) <= now and (c := await self._claim(r)) is not None]
        for reminder in claimed:
            await self._say_one(reminder)
        # after those: the read may first send the outbox (Supabase's queued marks), which must not
        # hold a reminder due now
        cut_off: list[Reminder] = []
        recheck_s = self.recheck_s
        try:
            await self._unsaid(cut_off)
        except StoreError as e:  # those taken up before the failure are said all the same
            log.warning("reminders cut off not read: %s; trying again", e, extra={"event": "reminders_unread"})
            recheck_s = min(recheck_s, _RETRY_S)
        for reminder in cut_off:
            await self._say_one(reminder)
        later = [self.turn_at(r) for r in pending if self.turn_at(r) > now]
        if not later:
            return recheck_s
        return min(recheck_s, max(0.0, (min(later) - self.clock.now_utc()).total_seconds()))

    async def _claim(self, reminder: Reminder) -> Reminder | None:
        """The reminder claimed by this device, None when another device had it or it was cancelled."""
        claimed = await self.store.claim_reminder(reminder.id, self.device)
        if claimed is not None:
            self._said.add(claimed.id)
            log.info(
                "reminder due %s claimed %.3f s after",
                claimed.due_at.isoformat(),
                (self.clock.now_utc() - claimed.due_at).total_seconds(),
                extra={"event": "reminder_claimed", "reminder_id": claimed.id, "kind": claimed.kind},
            )
        return claimed

    async def _unsaid(self, cut_off: list[Reminder]) -> None:
        """Into `cut_off`, the reminders whose saying was cut off that are this device's to say
        again, claimed again: the ones it claimed in an earlier process, and other devices' stale
        ones (each as soon as it is claimed, so a store failing half way loses none). The marks of
        ones said here that the store did not take are tried again."""
        for reminder in await self.store.unsaid_reminders(self.device, self.takeover_s):
            if reminder.id in self._heard:
                await self._mark_said(reminder)
                continue
            if reminder.id in self._said:
                continue  # its saying failed in this process: the next start (or another device) says it
            taken = await self.store.reclaim_reminder(reminder.id, self.device, self.takeover_s)
            if taken is None:
                continue  # said meanwhile, or its device took it up again first
            self._said.add(taken.id)
            log.info(
                "reminder due %s, claimed by %s and not said to its end, said again",
                taken.due_at.isoformat(),
                "this device" if reminder.claimed_by == self.device else reminder.claimed_by,
                extra={"event": "reminder_resaid", "reminder_id": taken.id, "kind": taken.kind},
            )
            cut_off.append(taken)

    async def _say_one(self, reminder: Reminder) -> None:
        self.said += 1
        try:
            await self._say(reminder, words_for(reminder, self.clock.now()))
        except Exception:  # a broken speaker must not stop the reminders after it
            log.exception("reminder %s could not be said", reminder.id, extra={"event": "reminder_unsaid"})
            return
        self._heard.add(reminder.id)
        await self._mark_said(reminder)

    async def _mark_said(self, reminder: Reminder) -> None:
        """Tell the store the reminder was said to its end; a mark it did not take is tried again
        at the next read. Queued while Supabase is away: the copy has it, the server gets it later."""
        try:
            await self.store.mark_reminder_said(reminder.id, self.device)
        except WriteQueued:
            pass
        except StoreError as e:
            log.warning(
                "reminder %s said but not marked said: %s; trying again",
                reminder.id,
                e,
                extra={"event": "reminder_unmarked"},
            )
            return
        self._heard.discard(reminder.id)


def reminder_speech(settings: Settings, client: Callable[[], genai.Client]) -> Speech:
    """What says the reminders: the speech model in the Live voice when the settings allow it
    (PARLA_REMINDER_VOICE=auto and a key), the offline command after it or alone."""
    model = None
    if settings.reminder_voice == "auto" and settings.has_gemini_key:
        model = SpeechModel(client(), settings.speech_model, settings.live_voice, settings.live_language)
    return Speech(settings.reminder_speech_command, model, settings.speech_timeout_s)


async def say_aloud(speaker: Speaker, words: str, speech: Speech, keep_open: Callable[[], bool]) -> None:
    """A cue at once, then `words` in speech (the speech model's, or the offline command's when it
    fails or takes too long); the speaker is closed again after it unless `keep_open()` (a session
    opened meanwhile). When neither can say them only the cue plays, and the log says why."""
    speaker.open()
    speaker.play(cue(rising=True))
    try:
        pcm = b""
        try:
            said = await speech.say(words)
            pcm = said.pcm
            speaker.play(pcm)
            seconds = len(pcm) / (SPEAKER_RATE * SAMPLE_BYTES)
            log.info("reminder said by %s (%.1f s)", said.by, seconds, extra={"event": "reminder_voice"})
        except SpeechFailed as e:
            log.warning("reminder not said in words: %s", e, extra={"event": "reminder_speech_failed"})
        await speaker.drained(len(pcm) / (SPEAKER_RATE * SAMPLE_BYTES) + 2.0)
    except asyncio.CancelledError:
        # stopped: silence now, so nothing is left queued to play at the next open, and the wait
        # for the speaker to drain (in a thread, which would hold the process's exit) ends
        speaker.flush()
        raise
    finally:
        if not keep_open():
            speaker.close()
