"""Dates a request names, absolute and relative."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from parla.memory.language.dates import find_date, mentioned_date

pytestmark = pytest.mark.tier("fast")

NOW = datetime(2026, 11, 23, 15, 30, tzinfo=UTC)  # a Monday
DAY = timedelta(days=1)


def day(y: int, m: int, d: int) -> tuple[datetime, datetime]:
    start = datetime(y, m, d, tzinfo=UTC)
    return start, start + DAY


@pytest.mark.parametrize(
    ("request_text", "span"),
    [
        ("the chat about the book on 8th December, 2023", day(2023, 12, 8)),
        ("what we said on May 7, 2023 about the race", day(2023, 5, 7)),
        ("la chat del 3 marzo 2025", day(2025, 3, 3)),
        ("the chat from 2026-02-01", day(2026, 2, 1)),
        ("the chat from yesterday about the dog", day(2026, 11, 22)),
        ("la chat di ieri", day(2026, 11, 22)),
        ("what we talked about 3 days ago", day(2026, 11, 20)),
        ("the chat from last Tuesday", day(2026, 11, 17)),
        ("the chat on Monday", day(2026, 11, 16)),  # today is Monday: the one before
    ],
)
def test_one_day(request_text: str, span: tuple[datetime, datetime]) -> None:
    found = mentioned_date(request_text, NOW)
    assert found is not None and (found.start, found.end) == span and found.one_day


def test_a_month_or_a_week_is_a_wider_span():
    month = mentioned_date("what John's team won in August 2023", NOW)
    assert month is not None and (month.start, month.end) == (
        datetime(2023, 8, 1, tzinfo=UTC),
        datetime(2023, 9, 1, tzinfo=UTC),
    )
    week = mentioned_date("the chat from last week", NOW)
    assert week is not None and (week.start, week.end) == (
        datetime(2026, 11, 16, tzinfo=UTC),
        datetime(2026, 11, 23, tzinfo=UTC),
    )
    assert not month.one_day and not week.one_day


@pytest.mark.parametrize(
    "request_text", ["the chat about my Monday meetings", "may I go back to the garden chat", "the 2023 budget"]
)
def test_no_date(request_text: str) -> None:
    assert mentioned_date(request_text, NOW) is None


@pytest.mark.parametrize(
    ("request_text", "start", "end"),
    [
        # a month without its year is the last one by that name (this month included)
        ("Ann's project in early January", datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 1, 11, tzinfo=UTC)),
        ("the chat in mid March", datetime(2026, 3, 11, tzinfo=UTC), datetime(2026, 3, 21, tzinfo=UTC)),
        ("what we said at the end of December", datetime(2025, 12, 21, tzinfo=UTC), datetime(2026, 1, 1, tzinfo=UTC)),
        ("the trip in November", datetime(2026, 11, 1, tzinfo=UTC), datetime(2026, 12, 1, tzinfo=UTC)),
        ("la chat di fine maggio 2024", datetime(2024, 5, 21, tzinfo=UTC), datetime(2024, 6, 1, tzinfo=UTC)),
        ("the move in 2022", datetime(2022, 1, 1, tzinfo=UTC), datetime(2023, 1, 1, tzinfo=UTC)),
    ],
)
def test_a_month_without_its_year_a_part_of_a_month_and_a_year(request_text: str, start: datetime, end: datetime):
    found = mentioned_date(request_text, NOW)
    assert found is not None and (found.start, found.end) == (start, end)


def test_where_the_date_is_said():
    """The search leaves a date's words out of the words it compares: it must know where they are."""
    text = "Ann's project in early January with the robots"
    found = find_date(text, NOW)
    assert found is not None and text[found.start : found.end] == "in early January"


@pytest.mark.parametrize("request_text", ["the chat where I said I may move", "a march for the climate"])
def test_a_month_name_that_is_a_word_is_no_date(request_text: str) -> None:
    assert mentioned_date(request_text, NOW) is None
