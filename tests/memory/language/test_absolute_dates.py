"""Relative dates made absolute with dateparser: what is read, and what is left as said."""

from __future__ import annotations

from datetime import datetime

import pytest

from parla.memory.language.absolute_dates import with_absolute_dates

pytestmark = pytest.mark.tier("fast")

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


@pytest.mark.parametrize(
    "said",
    ["time until March 12", "I may go in May", "we met in June, I think", "back in March"],
)
def test_a_month_without_its_day_is_not_read_as_relative_early_in_a_month(said):
    """A month named without a day took the day of the month it was said on: said on the 4th,
    "March" read as 4 March, and a week later as 11 March, so it passed for a relative date."""
    early = datetime(2026, 11, 4, 9, 0)
    assert with_absolute_dates(said, early, ["en"]) == said


@pytest.mark.parametrize(
    ("said", "kept"),
    [
        ("we should go", "we should go"),
        ("I sat in the sun", "I sat in the sun"),
        ("so we go on Friday", "so we go on Friday (Friday 27 November 2026)"),
        ("Marco is fr", "Marco is fr"),
    ],
)
def test_a_word_that_is_also_a_weekday_abbreviation_is_read_as_the_word(said, kept):
    """dateparser reads "we", "sat", "sun" and "fr" as weekdays, and a weekday moves by a week
    with the day it is read from: every "we" in a fact got a date."""
    assert with_absolute_dates(said, SAID, ["en"]) == kept
