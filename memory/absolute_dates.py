"""Relative dates in a fact the user said ("next Tuesday", "in two weeks", "domani") made absolute:
the date, computed from when it was said, is written beside the words, so a pin or a fact still
means the same day when it is read months later.

`dateparser` finds and reads the phrases in the user's language. Its search also takes absolute
dates and stray words ("may", month names without a year), and its search reads some phrases
differently from its parser ("the day after tomorrow"); so each phrase found is parsed again, from
when it was said and from a week later, and only a phrase whose date moves by exactly that week is
relative (its longest such start: "on Friday at nine" reads as September, "on Friday" as Friday). The date is added beside the words, never in their place: the user's words stay.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, time, timedelta
from typing import Any

import dateparser
from dateparser.search import search_dates

from parla.memory.local_time import spoken_date

_PROBE = timedelta(days=7)


def _settings(base: datetime) -> dict[str, Any]:
    # "on Friday" said on Wednesday is the coming Friday; "last Friday" still reads as the past one.
    return {"RELATIVE_BASE": base, "PREFER_DATES_FROM": "future", "RETURN_AS_TIMEZONE_AWARE": False}


def _parse(phrase: str, base: datetime, languages: list[str]) -> datetime | None:
    return dateparser.parse(phrase, languages=languages, settings=_settings(base))


def _relative_date(phrase: str, base: datetime, languages: list[str]) -> datetime | None:
    when = _parse(phrase, base, languages)
    later = _parse(phrase, base + _PROBE, languages)
    # "now" (and "today", read as now) is no date worth writing down
    if when is None or later is None or later - when != _PROBE or when == base:
        return None
    return when


def _prefixes(phrase: str) -> list[str]:
    """The phrase, then shorter and shorter by its last word: longest first."""
    out = [phrase]
    while " " in out[-1].strip():
        out.append(out[-1].rsplit(None, 1)[0])
    return out


def _relative(phrase: str, base: datetime, languages: list[str]) -> tuple[str, datetime] | None:
    """The relative date the phrase starts with, and its words: the longest prefix that reads as a
    relative date ("on Friday at nine" reads as September, "on Friday" as Friday), then the
    shortest with the same date (the words after it add nothing: "tomorrow and")."""
    prefixes = _prefixes(phrase)
    for i, prefix in enumerate(prefixes):
        when = _relative_date(prefix, base, languages)
        if when is None:
            continue
        for shorter in prefixes[i + 1 :]:
            if _parse(shorter, base, languages) != when:
                break
            prefix = shorter
        return prefix, when
    return None


def _said(when: datetime, base: datetime) -> str:
    day = spoken_date(when)
    # A phrase that names no time of day comes back at the base's time or at midnight.
    if when.time() in (base.time(), time(0)):
        return day
    return f"{day}, {when:%H:%M}"


def with_absolute_dates(text: str, said_at: datetime, languages: Sequence[str]) -> str:
    """`text` with the absolute date after each relative date phrase; `said_at` is the user's local
    time when it was said (its zone is dropped: the phrases are read in local time)."""
    base = said_at.replace(tzinfo=None, microsecond=0)
    langs = list(languages)
    found = search_dates(text, languages=langs, settings=_settings(base)) or []
    out, start = [], 0
    for phrase, _ in found:
        at = text.find(phrase, start)
        relative = _relative(phrase, base, langs) if at >= 0 else None
        if relative is None:
            continue
        words, when = relative
        end = at + len(words)
        out.append(f"{text[start:end]} ({_said(when, base)})")
        start = end
    return "".join(out) + text[start:]
