"""The extremes an imported file may hold, made storable or refused with a reason: dates every
store and every time zone can take, untimed turns that stay in the past, turns too long to keep
whole (cut, with a note) and how much of a file is held at once (`ReadLimits`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from ..config import MemoryConfig
from ..language.pieces import cut_point
from .shape import marker

# Dates outside these years are refused: 0001-01-01 cannot be shown west of Greenwich and
# 9999-12-31 cannot be followed by a second, and no chat was held then anyway.
EARLIEST = datetime(1900, 1, 1, tzinfo=UTC)
LATEST = datetime(2200, 1, 1, tzinfo=UTC)
# A turn without a time follows the one before it by this much, but never past the import.
UNTIMED_STEP = timedelta(seconds=1)
# An export nests about ten deep (the array, a conversation, its messages, a message, its content,
# its parts); a file nested deeper was made to hurt.
MAX_DEPTH = 64
# The most bytes a character of a JSON string takes in the file: an escape, \uXXXX.
_BYTES_PER_CHARACTER = 6
_READ_CUT = re.compile(r" \[([\d,]+) more bytes not read\]")


@dataclass(frozen=True)
class ReadLimits:
    """How much of a file `parla import` holds at once: a turn of more than `max_turn_chars` is
    cut (the file's strings are cut as they are read past `max_string_bytes`, which no turn kept
    whole reaches), a conversation of more than `max_conversation_bytes` or nested deeper than
    `max_depth` is refused, and one of more than `max_turns` turns is not stored."""

    max_turn_chars: int
    max_conversation_bytes: int
    max_depth: int = MAX_DEPTH
    max_turns: int = MemoryConfig.model_fields["import_max_conversation_turns"].default

    @classmethod
    def of(cls, config: MemoryConfig) -> ReadLimits:
        return cls(
            config.import_max_turn_chars,
            round(config.import_max_conversation_mb * (1 << 20)),
            max_turns=config.import_max_conversation_turns,
        )

    @property
    def max_string_bytes(self) -> int:
        return self.max_turn_chars * _BYTES_PER_CHARACTER

    @property
    def too_long(self) -> str:
        """Why a conversation past `max_conversation_bytes` is not read."""
        return f"longer than import_max_conversation_mb ({self.max_conversation_bytes / (1 << 20):g} MB)"

    def too_many(self, turns: int) -> str | None:
        """Why a conversation of `turns` turns is not stored, if it is not."""
        if turns <= self.max_turns:
            return None
        return f"{turns:,} turns, more than import_max_conversation_turns ({self.max_turns:,})"


def aware(value: datetime) -> datetime:
    """A date with its time zone: UTC when the file gives none."""
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def import_date(value: datetime | None) -> datetime | None:
    """An imported date as the file gives it (its text is part of a chat's id), or ValueError
    when it is out of range."""
    if value is None:
        return None
    try:
        within = EARLIEST <= aware(value) < LATEST
    except OverflowError:  # an offset that takes it past year 9999
        within = False
    if not within:
        raise ValueError(f"{value.isoformat()} is out of range (dates from {EARLIEST.year} to {LATEST.year - 1})")
    return value


def untimed_after(previous: datetime, now: datetime) -> datetime:
    """The time of a turn the file gives none, after a turn at `previous`: a step later, but
    not after the import (`now`), so a long untimed chat does not end in the future."""
    return max(previous, min(previous + UNTIMED_STEP, now))


def read_cut_mark(left_out: int) -> str:
    """What stands for the bytes of a string the reading left out (see `ReadLimits`)."""
    return f" [{left_out:,} more bytes not read]"


def cut_turn(text: str, max_chars: int) -> tuple[str, str]:
    """A turn longer than `max_chars`: its first part, cut after a sentence or a word near the
    limit, with a marker saying how much was left out; and its size as the import's note says it
    (with the bytes its reading left out, when it did)."""
    cut = cut_point(text, 0, max_chars)
    unread = list(_READ_CUT.finditer(text, cut))
    read = len(text) - sum(len(m.group()) for m in unread)  # the marks are not the turn's
    not_read = sum(int(m.group(1).replace(",", "")) for m in unread)
    left_out = f"{read - cut:,} more characters" + (f" and {not_read:,} bytes" if not_read else "")
    kept = text[:cut].rstrip() + "\n\n" + marker(f"{left_out} not imported: import_max_turn_chars")
    return kept, f"{read:,} characters" + (f" and {not_read:,} more bytes in the file" if not_read else "")
