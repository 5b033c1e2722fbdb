"""When a spoken request says the chat happened: "the chat from yesterday", "on 8 May, 2023",
"last Tuesday", "in August". Search gives chats active at that time a bonus.

Absolute dates are read with English, Italian, Spanish, German and French month names; relative
ones ("yesterday", "3 days ago", "last week", "last month", weekday names) in English and
Italian. A date the request does not name precisely (a month, a week) gives a wider span.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

_MONTHS = {
    # English, Italian, Spanish, German, French
    1: "january jan gennaio enero januar janvier",
    2: "february feb febbraio febrero februar février fevrier",
    3: "march mar marzo märz marz mars",
    4: "april apr aprile abril avril",
    5: "may maggio mayo mai",
    6: "june jun giugno junio juni juin",
    7: "july jul luglio julio juli juillet",
    8: "august aug agosto août aout",
    9: "september sep sept settembre septiembre septembre",
    10: "october oct ottobre octubre oktober octobre",
    11: "november nov novembre noviembre",
    12: "december dec dicembre diciembre dezember décembre decembre",
}
_MONTH = {name: number for number, names in _MONTHS.items() for name in names.split()}
_WEEKDAYS = {
    name: number
    for number, names in enumerate(
        [
            "monday lunedì lunedi",
            "tuesday martedì martedi",
            "wednesday mercoledì mercoledi",
            "thursday giovedì giovedi",
            "friday venerdì venerdi",
            "saturday sabato",
            "sunday domenica",
        ]
    )
    for name in names.split()
}
_NAME = "|".join(sorted(_MONTH, key=len, reverse=True))
_DAY = r"(\d{1,2})(?:st|nd|rd|th|°)?"
_YEAR = r"(\d{4})"
_DAY_MONTH_YEAR = re.compile(rf"\b{_DAY}\s+(?:of\s+|de\s+)?({_NAME})\.?,?\s+(?:de\s+)?{_YEAR}\b", re.IGNORECASE)
_MONTH_DAY_YEAR = re.compile(rf"\b({_NAME})\.?\s+{_DAY},?\s+{_YEAR}\b", re.IGNORECASE)
_MONTH_YEAR = re.compile(rf"\b({_NAME})\.?,?\s+(?:of\s+|de\s+|del\s+)?{_YEAR}\b", re.IGNORECASE)
_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_DAYS_AGO = re.compile(
    r"\b(\d{1,2}|a|one|two|three|four|five|six|seven)\s+days?\s+ago\b|\b(\d{1,2})\s+giorni\s+fa\b", re.IGNORECASE
)
_DAY_NAME = "|".join(_WEEKDAYS)
# "on Monday", "last Tuesday", "lunedì scorso": a bare weekday ("my Monday meetings") names no date
_WEEKDAY = re.compile(rf"\b(?:on|last|past)\s+({_DAY_NAME})\b|\b({_DAY_NAME})\s+scors[oa]\b", re.IGNORECASE)
_NUMBERS = {"a": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7}


@dataclass(frozen=True)
class DateSpan:
    """The days a request points at: [start, end), and whether it names one day."""

    start: datetime
    end: datetime

    @property
    def one_day(self) -> bool:
        return self.end - self.start <= timedelta(days=1)

    def overlaps(self, first: datetime, last: datetime, slack: timedelta) -> bool:
        return first - slack < self.end and self.start < last + slack


def _day(year: int, month: int, day: int) -> DateSpan | None:
    try:
        start = datetime(year, month, day, tzinfo=UTC)
    except ValueError:
        return None
    return DateSpan(start, start + timedelta(days=1))


def _month(year: int, month: int) -> DateSpan:
    start = datetime(year, month, 1, tzinfo=UTC)
    end = datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=UTC)
    return DateSpan(start, end)


def _midnight(moment: datetime) -> datetime:
    return moment.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)


def mentioned_date(text: str, now: datetime) -> DateSpan | None:
    """The first date the request names, absolute or relative to `now`; None when it names none."""
    if m := _ISO.search(text):
        return _day(int(m[1]), int(m[2]), int(m[3]))
    if m := _DAY_MONTH_YEAR.search(text):
        return _day(int(m[3]), _MONTH[m[2].lower()], int(m[1]))
    if m := _MONTH_DAY_YEAR.search(text):
        return _day(int(m[3]), _MONTH[m[1].lower()], int(m[2]))
    if m := _MONTH_YEAR.search(text):
        return _month(int(m[2]), _MONTH[m[1].lower()])
    return _relative(text.lower(), _midnight(now))


def _relative(text: str, today: datetime) -> DateSpan | None:
    day = timedelta(days=1)
    if re.search(r"\b(today|this morning|earlier today|oggi|stamattina)\b", text):
        return DateSpan(today, today + day)
    if re.search(r"\bday before yesterday\b|\bl'altro ieri\b|\baltroieri\b", text):
        return DateSpan(today - 2 * day, today - day)
    if re.search(r"\b(yesterday|last night|ieri)\b", text):
        return DateSpan(today - day, today)
    if m := _DAYS_AGO.search(text):
        count = m[1] or m[2]
        n = int(count) if count.isdigit() else _NUMBERS[count.lower()]
        return DateSpan(today - n * day, today - (n - 1) * day)
    if re.search(r"\b(last week|a week ago|la settimana scorsa|settimana scorsa)\b", text):
        monday = today - today.weekday() * day
        return DateSpan(monday - 7 * day, monday)
    if re.search(r"\b(last month|a month ago|il mese scorso|mese scorso)\b", text):
        first = today.replace(day=1)
        previous = first - day
        return _month(previous.year, previous.month)
    if m := _WEEKDAY.search(text):
        back = (today.weekday() - _WEEKDAYS[(m[1] or m[2]).lower()]) % 7 or 7
        start = today - back * day
        return DateSpan(start, start + day)
    return None
