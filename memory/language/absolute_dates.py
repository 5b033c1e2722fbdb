"""Relative dates in a fact the user said ("next Tuesday", "in two weeks", "domani") made absolute:
the date, computed from when it was said, is written beside the words, so a pin or a fact still
means the same day when it is read months later. `remember` reads them when the fact is given;
compaction reads them in the facts and pins it finds, from the time of the turn they come from.

`dateparser` finds and reads the phrases in the user's language. Its search also takes absolute
dates and stray words ("may", month names without a year), and its search reads some phrases
differently from its parser ("the day after tomorrow"); so each phrase found is parsed again, from
when it was said and from a week later, and only a phrase whose date moves by exactly that week is
relative (its longest such start: "on Friday at nine" reads as September, "on Friday" as Friday). The date is added beside the words, never in their place: the user's words stay.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import dateparser
from dateparser.search import search_dates

from parla.kernel.local_time import spoken_date

_PROBE = timedelta(days=7)


def _settings(base: datetime) -> dict[str, Any]:
    # "on Friday" said on Wednesday is the coming Friday; "last Friday" still reads as the past one.
    # A month named without its day reads as its first day, not the base's day of the month: else
    # "March", said on the 4th, reads as 4 March and a week later as 11 March, and passes for relative.
    return {
        "RELATIVE_BASE": base,
        "PREFER_DATES_FROM": "future",
        "PREFER_DAY_OF_MONTH": "first",
        "RETURN_AS_TIMEZONE_AWARE": False,
    }


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


# dateparser reads "tra 2 settimane" but not "tra due settimane", nor "dopodomani": in the copy it
# searches, a number word before a unit of time is read as its digits and "dopodomani" as "tra 2
# giorni" (the text kept is the user's own). English number words it reads already.
_UNITS = {"it": r"(?:minut[oi]|or[ae]|giorn[oi]|settiman[ae]|mes[ei]|ann[oi])"}
_NUMBER_WORDS = {
    "it": {
        "un": 1, "uno": 1, "una": 1, "due": 2, "tre": 3, "quattro": 4, "cinque": 5, "sei": 6, "sette": 7,
        "otto": 8, "nove": 9, "dieci": 10, "undici": 11, "dodici": 12, "quindici": 15, "venti": 20, "trenta": 30,
    },
}  # fmt: skip
_WORDS_AS_READ = {"it": {"dopodomani": "tra 2 giorni"}}


# A count of a unit of time alone ("a week", "due settimane") is a date only after "in" ("in a
# week", "tra due settimane"); after "for", "per" or nothing it is how long ("stays for a week").
_COUNTED = re.compile(
    r"(?:a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|un|uno|una|\d+)\s+"
    r"(?:minutes?|hours?|days?|weeks?|months?|years?|minut[oi]|or[ae]|giorn[oi]|settiman[ae]|mes[ei]|ann[oi])",
    re.IGNORECASE,
)
_FROM_NOW = frozenset({"in", "within", "tra", "fra", "entro"})


def _duration(phrase: str, before: str) -> bool:
    """`phrase`, found after the text `before`, says how long rather than when."""
    previous = before.split()[-1].lower() if before.split() else ""
    return _COUNTED.fullmatch(phrase.strip()) is not None and previous not in _FROM_NOW


_LETTERS = re.compile(r"[^\W\d_]+")


def _abbreviated(words: str) -> bool:
    """dateparser reads "we", "sat", "sun" or "fr" as weekdays: a phrase with no word of four
    letters or more is read as the words it also is. A spoken transcript spells dates out."""
    return all(len(word) < 4 for word in _LETTERS.findall(words))


def _readable(text: str, languages: Sequence[str]) -> tuple[str, list[tuple[int, int, int, int]]]:
    """The copy of `text` dateparser searches, and the pieces replaced in it: (start, end) in the
    copy, then (start, end) in `text`."""
    rules: list[tuple[re.Pattern[str], dict[str, str]]] = []
    for lang in languages:
        if lang in _NUMBER_WORDS:
            digits = {word: str(n) for word, n in _NUMBER_WORDS[lang].items()}
            words = "|".join(sorted(digits, key=len, reverse=True))
            rules.append((re.compile(rf"\b({words})\b(?=\s+{_UNITS[lang]}\b)", re.IGNORECASE), digits))
        if lang in _WORDS_AS_READ:
            read = _WORDS_AS_READ[lang]
            rules.append((re.compile(rf"\b({'|'.join(read)})\b", re.IGNORECASE), read))
    found = sorted(
        (
            (m.start(), m.end(), instead[m.group(1).lower()])
            for pattern, instead in rules
            for m in pattern.finditer(text)
        ),
        key=lambda f: f[0],
    )
    copy, pieces, at = [], [], 0
    length = 0
    for start, end, instead in found:
        if start < at:
            continue
        copy.append(text[at:start])
        length += start - at
        pieces.append((length, length + len(instead), start, end))
        copy.append(instead)
        length += len(instead)
        at = end
    copy.append(text[at:])
    return "".join(copy), pieces


def _in_text(pos: int, pieces: list[tuple[int, int, int, int]]) -> int:
    """The end position in the text of what ends at `pos` in the searched copy."""
    shift = 0
    for copy_start, copy_end, start, end in pieces:
        if pos <= copy_start:
            break
        if pos <= copy_end:
            return end
        shift = end - copy_end
    return pos + shift


def with_absolute_dates(text: str, said_at: datetime, languages: Sequence[str]) -> str:
    """`text` with the absolute date after each relative date phrase; `said_at` is the user's local
    time when it was said (its zone is dropped: the phrases are read in local time)."""
    base = said_at.replace(tzinfo=None, microsecond=0)
    langs = list(languages)
    readable, pieces = _readable(text, langs)
    found = search_dates(readable, languages=langs, settings=_settings(base)) or []
    out, start, searched = [], 0, 0
    for phrase, _ in found:
        at = readable.find(phrase, searched)
        relative = _relative(phrase, base, langs) if at >= 0 else None
        if relative is None or _abbreviated(relative[0]) or _duration(relative[0], readable[:at]):
            continue
        words, when = relative
        searched = at + len(words)
        end = _in_text(searched, pieces)
        out.append(f"{text[start:end]} ({_said(when, base)})")
        start = end
    return "".join(out) + text[start:]


@dataclass(frozen=True)
class DateReading:
    """How relative dates in what the user said are read: in the user's time zone (None: the
    system's) and languages."""

    zone: str | None
    languages: tuple[str, ...]

    def dated(self, text: str, said_at: datetime) -> str:
        """`text` with absolute dates, read from `said_at` (any zone) as the user's local time."""
        local = said_at.astimezone(ZoneInfo(self.zone)) if self.zone else said_at.astimezone()
        return with_absolute_dates(text, local, self.languages)
