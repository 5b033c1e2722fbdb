"""The inspector's reminders page: the timers and reminders to come (each with its time in the
zone it was set in, its chat, the device it was set on) and those said or cancelled, which device
said each; set one, cancel one. Changes go through the store's reminder API, as `parla reminders`
does, and wake the daemon's scheduler when the inspector runs in the daemon."""

from __future__ import annotations

import asyncio
from typing import Protocol
from zoneinfo import ZoneInfo

from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from parla.kernel.errors import ParlaError
from parla.kernel.local_time import LocalClock
from parla.memory.config import MemoryConfig
from parla.memory.language.absolute_dates import DateReading
from parla.memory.language.due_times import due_time
from parla.memory.store.protocol import ReminderRecords
from parla.records.reminder import Reminder, bounded_text

from .forms import form_fields, one_line
from .pages import RenderPage, back


class ReminderMemory(Protocol):
    """What the reminders page needs of the memory services (`ui.memory.InspectorMemory`)."""

    @property
    def store(self) -> ReminderRecords: ...
    @property
    def dates(self) -> DateReading: ...
    @property
    def reminder_wake(self) -> asyncio.Event: ...
    @property
    def settings(self) -> MemoryConfig: ...


def local_due(reminder: Reminder) -> str:
    """'Thu 2026-11-26 17:00 Europe/Rome': in the zone it was set in."""
    return f"{reminder.due_at.astimezone(ZoneInfo(reminder.time_zone)):%a %Y-%m-%d %H:%M} {reminder.time_zone}"


class ReminderPages:
    def __init__(self, mem: ReminderMemory, render: RenderPage, clock: LocalClock) -> None:
        self.mem = mem
        self.render = render
        self.clock = clock

    async def page(self, request: Request) -> Response:
        store = self.mem.store
        coming = await store.list_reminders()
        done = [r for r in await store.list_reminders(history=True) if r.state != "pending"]
        return await self.render(
            request,
            "reminders.html",
            coming=coming,
            done=done,
            local_due=local_due,
            max_chars=self.mem.settings.reminder_max_chars,
        )

    async def add(self, request: Request) -> Response:
        form = await form_fields(request)
        try:
            text = bounded_text(form.get("text", ""), self.mem.settings.reminder_max_chars)
            due = due_time(form.get("when", "").strip(), self.clock.now().at, self.mem.dates.languages)
            stored = await self.mem.store.add_reminder(
                Reminder(text=text, due_at=due, time_zone=self.clock.zone or "UTC")
            )
        except (ParlaError, ValidationError) as e:
            return back(request, "/reminders", error=one_line(e))
        self.mem.reminder_wake.set()
        return back(request, "/reminders", note=f"Set for {local_due(stored)}: {stored.text}")

    async def cancel(self, request: Request) -> Response:
        await form_fields(request)
        try:
            cancelled = await self.mem.store.cancel_reminder(request.path_params["reminder_id"])
        except ParlaError as e:
            return back(request, "/reminders", error=one_line(e))
        self.mem.reminder_wake.set()
        return back(request, "/reminders", note=f"Cancelled: {cancelled.text}")

    def routes(self) -> list[Route]:
        post = ["POST"]
        return [
            Route("/reminders", self.page),
            Route("/reminders/add", self.add, methods=post),
            Route("/reminders/{reminder_id}/cancel", self.cancel, methods=post),
        ]
