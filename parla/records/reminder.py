"""Timers and reminders: what the user asked to be told at a time, kept in the store so they
survive a restart, and said by one device when they are due.

A reminder is due at a moment in UTC (`due_at`) and keeps the user's zone when it was set, so it
can be read back in the user's local time. It names the chat (and the turn) it was set in, so
"take me there" can switch to that chat. Its state moves once: pending to fired (claimed by the
device that says it, atomically in the store) or pending to cancelled; a fired or cancelled
reminder stays stored as history. A fired reminder counts as said only once its saying finished
(`said_at`): one whose saying a stop, a kill or a power loss cut off is said again by the device
that claimed it, at its next start.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from parla.memory.errors import UnreadableTime
from parla.records.turn import new_id, storable_text, utcnow

ReminderKind = Literal["timer", "reminder"]
ReminderState = Literal["pending", "fired", "cancelled"]


class Reminder(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str = Field(default_factory=new_id)
    text: str = Field(min_length=1)
    due_at: datetime  # aware; stored in UTC
    time_zone: str = "UTC"  # the user's IANA zone when it was set
    kind: ReminderKind = "reminder"
    # where it was set: None for one added from the CLI
    chat_id: str | None = None
    turn_id: str | None = None
    device: str | None = None  # the device it was set on (it says it first: docs/guides/reminders.md)
    state: ReminderState = "pending"
    claimed_by: str | None = None  # the device that says it
    created_at: datetime = Field(default_factory=utcnow)
    fired_at: datetime | None = None  # claimed
    said_at: datetime | None = None  # its saying finished; None while claimed and not yet said whole
    cancelled_at: datetime | None = None

    @field_validator("text")
    @classmethod
    def _storable(cls, text: str, info: ValidationInfo) -> str:
        return storable_text(text.strip() or text, f"reminder {info.data.get('id')}")

    @field_validator("due_at", "created_at", "fired_at", "said_at", "cancelled_at")
    @classmethod
    def _aware(cls, moment: datetime | None) -> datetime | None:
        if moment is not None and moment.tzinfo is None:
            raise ValueError("a reminder's moments must say their time zone")
        return moment

    @field_validator("time_zone")
    @classmethod
    def _zone(cls, zone: str) -> str:
        try:
            ZoneInfo(zone)  # an unknown name fails here, not when the reminder is read back
        except (ZoneInfoNotFoundError, ValueError) as e:
            raise ValueError(f"unknown time zone {zone!r}") from e
        return zone

    def spoken(self) -> str:
        """What is said when it is due."""
        return f"Timer: {self.text}" if self.kind == "timer" else f"Reminder: {self.text}"


def due_time(when: str, now: datetime, languages: Sequence[str]) -> datetime:
    """The moment to come that `when` names ("in 10 minutes", "at 17:00", "tomorrow at 09:00",
    "tra 10 minuti", "morgen 9:00"), read by dateparser in `languages` from `now` (aware, in the
    user's zone) and in that zone. A time of day already past today is tomorrow's. Raises
    `UnreadableTime` for words that read as no moment, or as one already past."""
    import dateparser  # here: its languages take a tenth of a second to load, which `parla chats` need not pay

    zone = now.tzinfo
    base = now.replace(tzinfo=None)
    settings: dict[str, object] = {
        "RELATIVE_BASE": base,
        "PREFER_DATES_FROM": "future",
        "RETURN_AS_TIMEZONE_AWARE": False,
    }
    # dateparser's languages first, then English, which models and users fall back on
    read = dateparser.parse(when, languages=list(dict.fromkeys([*languages, "en"])), settings=settings)
    if read is None:
        raise UnreadableTime(
            f"could not read {when!r} as a time; say it as 'in 10 minutes', 'at 17:00' or 'tomorrow at 09:00'"
        )
    moment = read.replace(tzinfo=zone)
    if moment < now and read.date() == base.date():
        moment += timedelta(days=1)
    if moment <= now:
        raise UnreadableTime(f"{when!r} is already past (it is {now:%H:%M} now); give a time to come")
    return moment
