"""A reminder's time as the user says it ("in 10 minutes", "tomorrow at 09:00", "tra 10 minuti"),
read as the moment to come."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from ..errors import UnreadableTime


def due_time(when: str, now: datetime, languages: Sequence[str]) -> datetime:
    """The moment to come that `when` names ("in 10 minutes", "at 17:00", "tomorrow at 09:00",
    "tra 10 minuti", "morgen 9:00"), read by dateparser in `languages` from `now` (aware, in the
    user's zone) and in that zone. A time of day already past today is tomorrow's; a time counted
    from now ("in -5 minutes", "5 minutes ago") is what it says. Raises `UnreadableTime` for words
    that read as no moment, or as one already past."""
    zone = now.tzinfo
    base = now.replace(tzinfo=None)
    read = _read(when, languages, base)
    if read is None:
        raise UnreadableTime(
            f"could not read {when!r} as a time; say it as 'in 10 minutes', 'at 17:00' or 'tomorrow at 09:00'"
        )
    moment = read.replace(tzinfo=zone)
    if moment < now and read.date() == base.date() and not _counted_from_now(when, languages, base, read):
        moment += timedelta(days=1)
    if moment <= now:
        raise UnreadableTime(f"{when!r} is already past (it is {now:%H:%M} now); give a time to come")
    return moment


# How much later the base of the second reading is (`_counted_from_now`).
_SHIFT = timedelta(hours=1)


def _read(when: str, languages: Sequence[str], base: datetime) -> datetime | None:
    import dateparser  # here: its languages take a tenth of a second to load, which `parla chats` need not pay

    settings: dict[str, object] = {
        "RELATIVE_BASE": base,
        "PREFER_DATES_FROM": "future",
        "RETURN_AS_TIMEZONE_AWARE": False,
    }
    # dateparser's languages first, then English, which models and users fall back on
    read: datetime | None = dateparser.parse(when, languages=list(dict.fromkeys([*languages, "en"])), settings=settings)
    return read


def _counted_from_now(when: str, languages: Sequence[str], base: datetime, read: datetime) -> bool:
    """Whether the words count from now ("in -5 minutes", "5 minutes ago", "tra 10 minuti"): read
    from a base an hour later, they move by that hour, where a time of day ("at 13:00") does not.
    dateparser says not which it read, and the words differ by language."""
    return _read(when, languages, base + _SHIFT) == read + _SHIFT
