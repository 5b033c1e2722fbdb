"""The extremes an imported line may hold, made storable or refused with a reason: dates every
store and every time zone can take, untimed turns that stay in the past, and turns too long for
one summarising step, split in one pass (a 50 MB turn in seconds, not hours)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

# Dates outside these years are refused: 0001-01-01 cannot be shown west of Greenwich and
# 9999-12-31 cannot be followed by a second, and no chat was held then anyway.
EARLIEST = datetime(1900, 1, 1, tzinfo=UTC)
LATEST = datetime(2200, 1, 1, tzinfo=UTC)
# A turn without a time follows the one before it by this much, but never past the import.
UNTIMED_STEP = timedelta(seconds=1)
_SPLIT_AT = re.compile(r"\n\s*\n|(?<=[.!?])\s+|\n")


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


def split_text(text: str, max_chars: int) -> list[str]:
    """`text` in pieces of at most `max_chars`, cut after a paragraph or sentence where possible.
    Each cut looks at one window of the text only: the work is linear in its length."""
    pieces, start = [], 0
    while len(text) - start > max_chars:
        end = start + max_chars
        ends = [m.end() for m in _SPLIT_AT.finditer(text, start, end) if m.end() - start >= max_chars // 2]
        space = text.rfind(" ", start, end)
        cut = ends[-1] if ends else (space + 1 if space >= 0 else end)
        pieces.append(text[start:cut].strip())
        start = cut
    return [p for p in [*pieces, text[start:].strip()] if p]
