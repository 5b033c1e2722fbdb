"""`parla reminders ...`: list, add and cancel timers and reminders (parla.records.reminder). A reminder
is named by its number in `parla reminders list`, the start of its id, or words of its text. A
running daemon is told at once, so one set here for in a minute is said in a minute."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer
from rich.markup import escape
from rich.table import Table

from ..errors import CommandFailed
from .support import (
    MEMORY,
    by_number_or_id,
    command,
    emit_json,
    group,
    iso,
    load_settings,
    open_memory,
    out,
    tell_daemon,
)

if TYPE_CHECKING:
    from parla.kernel.local_time import LocalTime
    from parla.memory.store.protocol import ReminderRecords
    from parla.records.reminder import Reminder

    from ..settings import Settings


def _zone(settings: Settings) -> LocalTime:
    """Now in the user's zone: its name (PARLA_TIME_ZONE, or the system's) and its tzinfo."""
    from parla.kernel.local_time import LocalClock

    return LocalClock(settings.time_zone).now()


def _local(settings: Settings, reminder: Reminder) -> str:
    """'Mon 2026-11-30 17:00:00 CET': in the user's zone, with its abbreviation, which also tells
    summer time from winter time in a list that spans the change."""
    return f"{reminder.due_at.astimezone(_zone(settings).at.tzinfo):%a %Y-%m-%d %H:%M:%S %Z}"


def _json(settings: Settings, number: int | None, r: Reminder) -> dict[str, Any]:
    return {
        "number": number,
        "id": r.id,
        "kind": r.kind,
        "text": r.text,
        "due_at": iso(r.due_at),
        "due_local": _local(settings, r),
        "local_zone": _zone(settings).zone,
        "time_zone": r.time_zone,
        "state": r.state,
        "chat_id": r.chat_id,
        "device": r.device,
        "claimed_by": r.claimed_by,
        "said_by": r.claimed_by if r.said_at else None,
        "said_at": iso(r.said_at),
    }


def _state(r: Reminder) -> str:
    if r.state == "fired" and r.said_at is None:  # cut off: said again when that device starts
        return f"claimed by {escape(r.claimed_by or '')}, not said to its end yet"
    return "said" + (f" by {escape(r.claimed_by)}" if r.claimed_by else "") if r.state == "fired" else r.state


async def _find(store: ReminderRecords, ref: str) -> Reminder:
    from parla.tools.reminders import best_matches

    pending = await store.list_reminders()
    found = by_number_or_id(pending, ref, pending, lambda r: r.id) or best_matches(pending, ref)
    if len(found) != 1:
        what = "no reminder" if not found else f"{len(found)} reminders"
        raise CommandFailed(f"{what} to come match {ref!r}: `parla reminders list` shows numbers and ids")
    return found[0]


@command
async def list_(
    everything: bool = typer.Option(False, "--all", help="Said and cancelled ones too, newest first."),
    as_json: bool = typer.Option(False, "--json", help="Print as JSON."),
) -> None:
    """Your timers and reminders to come, soonest first."""
    settings = load_settings()
    async with open_memory(settings) as mem:
        reminders = await mem.store.list_reminders(history=everything)
    numbered = [(None if everything else n, r) for n, r in enumerate(reminders, start=1)]
    if as_json:
        emit_json([_json(settings, n, r) for n, r in numbered], "reminders list")
        return
    if not reminders:
        out.print("No reminders to come." if not everything else "No reminders yet.")
        return
    table = Table("#" if not everything else "id", f"when ({_zone(settings).zone})", "what", "kind", "chat", "state")
    for n, r in numbered:
        state = _state(r)
        chat = r.chat_id[:8] if r.chat_id else ""
        table.add_row(str(n) if n else r.id[:8], _local(settings, r), escape(r.text), r.kind, chat, state)
    out.print(table)


@command
async def add(
    text: str = typer.Argument(..., help="What to be reminded of."),
    at: str = typer.Option(..., "--at", help="When: 'at 17:00', 'tomorrow at 09:00', 'in 10 minutes'."),
    timer: bool = typer.Option(False, "--timer", help="A timer rather than a reminder."),
) -> None:
    """Set a reminder; the running daemon says it at its time."""
    from parla.kernel.local_time import LocalClock
    from parla.memory.language.due_times import due_time
    from parla.records.reminder import Reminder, bounded_text

    settings = load_settings()
    text = bounded_text(text, settings.reminder_max_chars)
    async with open_memory(settings) as mem:
        now = LocalClock(settings.time_zone).now().at
        reminder = Reminder(
            text=text,
            due_at=due_time(at, now, mem.dates.languages),
            time_zone=settings.time_zone or "UTC",
            kind="timer" if timer else "reminder",
            device=settings.device_name,
        )
        try:
            stored = await mem.store.add_reminder(reminder)
        finally:
            await tell_daemon(settings.control_socket, "reminders")  # a queued one is said here all the same
    out.print(f"Set {stored.id[:8]} for {_local(settings, stored)}: {escape(stored.text)}")


@command
async def cancel(
    reminder: str = typer.Argument(..., help="Its number in `parla reminders list`, id, or words."),
) -> None:
    """Cancel a timer or reminder to come."""
    settings = load_settings()
    async with open_memory(settings) as mem:
        found = await _find(mem.store, reminder)
        try:
            stored = await mem.store.cancel_reminder(found.id)
        finally:
            await tell_daemon(settings.control_socket, "reminders")
    out.print(f"Cancelled {stored.id[:8]}: {escape(stored.text)}")


COMMANDS = {
    "reminders": group(
        "Timers and reminders the daemon says at their time: list, add, cancel.",
        {"list": list_, "add": add, "cancel": cancel},
    ),
}
PANEL = MEMORY
