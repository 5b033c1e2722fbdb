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

import logging
from datetime import datetime
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from .errors import ReminderTooLong
from .turn import new_id, storable_text, utcnow

log = logging.getLogger(__name__)

ReminderKind = Literal["timer", "reminder"]
ReminderState = Literal["pending", "fired", "cancelled"]

# The longest text a reminder keeps, whatever wrote it: a row longer than this (written by another
# client, or before the bound) is cut where it is read, so no list, page or speech gets it whole.
# 2,000 characters take flite about 100 s to say, well within the 300 s after which another device
# takes up a saying it thinks was cut off (PARLA_REMINDER_TAKEOVER_S). Where a text comes in (the
# tools, the CLI, the inspector) the bound is the user's PARLA_REMINDER_MAX_CHARS, at most this.
MAX_REMINDER_CHARS = 2000


def bounded_text(text: str, max_chars: int) -> str:
    """`text` as a reminder is set with (stripped), or `ReminderTooLong` past `max_chars`."""
    text = text.strip()
    if len(text) > max_chars:
        raise ReminderTooLong(
            f"a reminder's text is at most {max_chars} characters; this one has {len(text)}: say it in fewer words"
        )
    return text


def _cut(text: str, what: str) -> str:
    if len(text) <= MAX_REMINDER_CHARS:
        return text
    log.warning("%s has %d characters: read as its first %d", what, len(text), MAX_REMINDER_CHARS)
    return text[: MAX_REMINDER_CHARS - 1].rstrip() + "…"


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
        what = f"reminder {info.data.get('id')}"
        return storable_text(_cut(text.strip() or text, what), what)

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
