"""The records' errors: what a record refuses to be made from, with a message for the user."""

from __future__ import annotations

from parla.kernel.errors import ParlaError


class RangeError(ParlaError):
    """A range given for regeneration does not name whole chunks of the chat."""


class ReminderTooLong(ParlaError):
    """A reminder's text is longer than the bound where reminders are set."""
