"""The user's local date, weekday, time and time zone, as the live model is told them.

The zone is an IANA name from the settings, or the system's own when none is set. The clock reads
the time on every call, so a session that lasts hours (resumptions, GoAways) is told the time of
its connection and can ask for the time now (the `current_time` tool); `now_utc` is replaceable so
a test can move the clock by hours.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

# English names whatever the process's locale (strftime's %A and %B follow LC_TIME); the model says
# them in the user's language.
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)


def weekday(day: datetime) -> str:
    return _WEEKDAYS[day.weekday()]


def spoken_date(day: datetime) -> str:
    """'Wednesday 25 November 2026'."""
    return f"{weekday(day)} {day.day} {_MONTHS[day.month - 1]} {day.year}"


def _utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class LocalTime:
    at: datetime  # aware, in the user's zone
    zone: str

    @property
    def utc_offset(self) -> str:
        offset = self.at.strftime("%z")  # "+0100"
        return f"{offset[:3]}:{offset[3:]}"

    def spoken(self) -> str:
        # Day and month by name, and ISO beside them, which is unambiguous.
        return (
            f"{spoken_date(self.at)}, {self.at:%H:%M} ({self.at:%Y-%m-%d}, time zone {self.zone}, UTC{self.utc_offset})"
        )

    def as_answer(self) -> dict[str, str]:
        return {
            "date": self.at.strftime("%Y-%m-%d"),
            "weekday": weekday(self.at),
            "time": self.at.strftime("%H:%M"),
            "time_zone": self.zone,
            "utc_offset": self.utc_offset,
        }


@dataclass(frozen=True)
class LocalClock:
    zone: str | None = None  # an IANA name; None: the system's zone
    now_utc: Callable[[], datetime] = field(default=_utc_now)

    def now(self) -> LocalTime:
        utc = self.now_utc()
        if self.zone:
            return LocalTime(utc.astimezone(ZoneInfo(self.zone)), self.zone)
        local = utc.astimezone()
        return LocalTime(local, local.tzname() or "local")

    def note(self) -> str:
        """The line of the system instruction that says when the session began."""
        return (
            f"When this session began it was {self.now().spoken()} for the user. "
            "The session may last hours: for the date or time now, call current_time."
        )
