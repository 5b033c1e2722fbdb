"""When a spoken request says the chat happened: "the chat from yesterday", "on 8 May, 2023",
"last Tuesday", "in early January", "in 2022". Search gives chats active at that time a bonus,
and leaves the date's words out of the words it compares (a month's name in a request is about
when, not what: it must not find a fact that happens to name that month).

Absolute dates are read with English, Italian, Spanish, German and French month names; relative
ones ("yesterday", "3 days ago", "last week", "last month", weekday names) in English and
Italian. A date the request does not name precisely (a month, a week, a year) gives a wider span;
a month without its year is the last one by that name, this month included.
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
# A month named without its year, only after a word that makes it a date ("in May", "early
# March", "a fine maggio"): "may" and "march" are words too; abbreviations and "mars" are left out.
_SHORT = frozenset(["jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec", "mars"])
_FULL_NAME = "|".join(sorted((n for n in _MONTH if n not in _SHORT), key=len, reverse=True))
# Thirds of a month ("early January" is its first ten days), in the five languages.
_PARTS = {
    0: "early beginning start inizio principio principios anfang début debut",
    1: "mid middle metà meta mediados mitte",
    2: "late end fine finales ende fin",
}
_PART = {name: third for third, names in _PARTS.items() for name in names.split()}
_PART_NAME = "|".join(sorted(_PART, key=len, reverse=True))
_BEFORE_MONTH = r"in|during|since|until|by|a|ad|di|nel|durante|en|de|im|seit|vers"
# English months that are words too: a date only after an English word ("in May", not "a march").
_WORDS_TOO = frozenset({"may", "march"})
_ENGLISH_BEFORE = frozenset(["in", "during", "since", "until", "by"])
_DAY = r"(\d{1,2})(?:st|nd|rd|th|°)?"
_YEAR = r"(\d{4})"
_DAY_MONTH_YEAR = re.compile(rf"\b{_DAY}\s+(?:of\s+|de\s+)?({_NAME})\.?,?\s+(?:de\s+)?{_YEAR}\b", re.IGNORECASE)
_MONTH_DAY_YEAR = re.compile(rf"\b({_NAME})\.?\s+{_DAY},?\s+{_YEAR}\b", re.IGNORECASE)
_MONTH_YEAR = re.compile(rf"\b({_NAME})\.?,?\s+(?:of\s+|de\s+|del\s+)?{_YEAR}\b", re.IGNORECASE)
_MONTH_ALONE = re.compile(
    rf"\b(?:(?P<before>{_BEFORE_MONTH})\s+)?(?:the\s+)?(?:(?P<part>{_PART_NAME})\s+(?:of\s+|de\s+|di\s+)?)?"
    rf"(?P<month>{_FULL_NAME})(?:,?\s+(?:of\s+|de\s+|del\s+)?(?P<year>\d{{4}}))?\b",
    re.IGNORECASE,
)
_YEAR_ALONE = re.compile(r"\b(?:in|during|since|nel|del|en|im|seit)\s+(?:the\s+year\s+)?(\d{4})\b", re.IGNORECASE)
_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_DAYS_AGO = re.compile(
    r"\b(\d{1,2}|a|one|two|three|four|five|six|seven)\s+days?\s+ago\b|\b(\d{1,2})\s+giorni\s+fa\b", re.IGNORECASE
)
_DAY_NAME = "|".join(_WEEKDAYS)
# "on Monday", "last Tuesday", "lunedì scorso": a bare weekday ("my Monday meetings") names no date
_WEEKDAY = re.compile(rf"\b(?:on|last|past)\s+({_DAY_NAME})\b|\b({_DAY_NAME})\s+scors[oa]\b", re.IGNORECASE)
_NUMBERS = {"a": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7}
_TODAY = re.compile(r"\b(today|this morning|earlier today|oggi|stamattina)\b", re.IGNORECASE)
_DAY_BEFORE = re.compile(r"\bday before yesterday\b|\bl'altro ieri\b|\baltroieri\b", re.IGNORECASE)
_YESTERDAY = re.compile(r"\b(yesterday|last night|ieri)\b", re.IGNORECASE)
_LAST_WEEK = re.compile(r"\b(last week|a week ago|la settimana scorsa|settimana scorsa)\b", re.IGNORECASE)
_LAST_MONTH = re.compile(r"\b(last month|a month ago|il mese scorso|mese scorso)\b", re.IGNORECASE)


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


@dataclass(frozen=True)
class FoundDate:
    """A date a request names and where it says it: `text[start:end]`."""

    span: DateSpan
    start: int
    end: int


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


def _third(span: DateSpan, third: int) -> DateSpan:
    """Days 1-10, 11-20 or 21 to the end of a month."""
    start = span.start + timedelta(days=10 * third)
    return DateSpan(start, span.end if third == 2 else start + timedelta(days=10))


def _midnight(moment: datetime) -> datetime:
    return moment.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)


def mentioned_date(text: str, now: datetime) -> DateSpan | None:
    """The first date the request names, absolute or relative to `now`; None when it names none."""
    found = find_date(text, now)
    return None if found is None else found.span


def find_date(text: str, now: datetime) -> FoundDate | None:
    """The first date the request names and where; None when it names none."""
    for read in (_absolute, _month_alone, _month_year, _year_alone, _relative):
        if found := read(text, now):
            return found
    return None


def _absolute(text: str, now: datetime) -> FoundDate | None:
    span: DateSpan | None = None
    if m := _ISO.search(text):
        span = _day(int(m[1]), int(m[2]), int(m[3]))
    elif m := _DAY_MONTH_YEAR.search(text):
        span = _day(int(m[3]), _MONTH[m[2].lower()], int(m[1]))
    elif m := _MONTH_DAY_YEAR.search(text):
        span = _day(int(m[3]), _MONTH[m[1].lower()], int(m[2]))
    return FoundDate(span, m.start(), m.end()) if span is not None and m is not None else None


def _month_alone(text: str, now: datetime) -> FoundDate | None:
    """ "in May", "early January", "fine maggio 2024": a month after a word that makes it a date,
    with or without its year (without: the last one by that name, this month included)."""
    for m in _MONTH_ALONE.finditer(text):
        if not (m["before"] or m["part"]):
            continue
        if m["month"].lower() in _WORDS_TOO and not m["part"] and m["before"].lower() not in _ENGLISH_BEFORE:
            continue
        month = _MONTH[m["month"].lower()]
        year = int(m["year"]) if m["year"] else now.year - (month > now.month)
        span = _month(year, month)
        if m["part"]:
            span = _third(span, _PART[m["part"].lower()])
        return FoundDate(span, m.start(), m.end())
    return None


def _month_year(text: str, now: datetime) -> FoundDate | None:
    m = _MONTH_YEAR.search(text)
    return None if m is None else FoundDate(_month(int(m[2]), _MONTH[m[1].lower()]), m.start(), m.end())


def _year_alone(text: str, now: datetime) -> FoundDate | None:
    m = _YEAR_ALONE.search(text)
    if m is None or not 1900 < int(m[1]) < 2200:
        return None
    start = datetime(int(m[1]), 1, 1, tzinfo=UTC)
    return FoundDate(DateSpan(start, start.replace(year=start.year + 1)), m.start(), m.end())


def _relative(text: str, now: datetime) -> FoundDate | None:
    today = _midnight(now)
    day = timedelta(days=1)
    if m := _TODAY.search(text):
        return FoundDate(DateSpan(today, today + day), m.start(), m.end())
    if m := _DAY_BEFORE.search(text):
        return FoundDate(DateSpan(today - 2 * day, today - day), m.start(), m.end())
    if m := _YESTERDAY.search(text):
        return FoundDate(DateSpan(today - day, today), m.start(), m.end())
    if m := _DAYS_AGO.search(text):
        count = m[1] or m[2]
        n = int(count) if count.isdigit() else _NUMBERS[count.lower()]
        return FoundDate(DateSpan(today - n * day, today - (n - 1) * day), m.start(), m.end())
    if m := _LAST_WEEK.search(text):
        monday = today - today.weekday() * day
        return FoundDate(DateSpan(monday - 7 * day, monday), m.start(), m.end())
    if m := _LAST_MONTH.search(text):
        previous = today.replace(day=1) - day
        return FoundDate(_month(previous.year, previous.month), m.start(), m.end())
    if m := _WEEKDAY.search(text):
        back = (today.weekday() - _WEEKDAYS[(m[1] or m[2]).lower()]) % 7 or 7
        start = today - back * day
        return FoundDate(DateSpan(start, start + day), m.start(), m.end())
    return None
