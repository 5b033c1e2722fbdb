"""Relative dates made absolute with dateparser: what is read, and what is left as said."""

from __future__ import annotations

from datetime import datetime

import pytest

from parla.memory.absolute_dates import with_absolute_dates

SAID = datetime(2026, 11, 25, 10, 30)  # a Wednesday


@pytest.mark.parametrize(
    ("said", "language", "kept"),
    [
        ("Dentist on Friday at nine", "en", "Dentist on Friday (Friday 27 November 2026) at nine"),
        ("the exam is the day after tomorrow", "en", "the exam is the day after tomorrow (Friday 27 November 2026)"),
        (
            "dinner tomorrow and lunch on Friday",
            "en",
            "dinner tomorrow (Thursday 26 November 2026) and lunch on Friday (Friday 27 November 2026)",
        ),
        ("cena con Marco domani sera", "it", "cena con Marco domani (Thursday 26 November 2026) sera"),
        # number words before a unit of time, and "dopodomani", read in Italian too
        ("parte tra due settimane", "it", "parte tra due settimane (Wednesday 9 December 2026)"),
        ("esame dopodomani alle 9", "it", "esame dopodomani (Friday 27 November 2026) alle 9"),
        ("sei libero domani?", "it", "sei libero domani (Thursday 26 November 2026)?"),
        ("flying out in three days", "en", "flying out in three days (Saturday 28 November 2026)"),
        # absolute dates, the month "May", the word "may" and "now" are left as said
        ("the meeting was on 8 May 2023", "en", "the meeting was on 8 May 2023"),
        ("I may go in May", "en", "I may go in May"),
        ("Ada now lives in Turin", "en", "Ada now lives in Turin"),
    ],
)
def test_relative_dates_get_their_date_and_nothing_else_changes(said, language, kept):
    assert with_absolute_dates(said, SAID, [language]) == kept
