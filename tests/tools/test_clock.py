"""current_time through the tool registry: the user's zone, across midnight and a change of the
clocks, whatever the machine's own zone."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from parla.kernel.local_time import LocalClock
from parla.tools.clock import clock_tools
from parla.tools.registry import ToolRegistry

pytestmark = pytest.mark.tier("fast")


async def test_current_time_is_the_users_local_time_across_a_change_of_the_clocks():
    utc = datetime(2026, 3, 29, 0, 30, tzinfo=UTC)  # Rome moves to summer time at 01:00 UTC that night
    registry = ToolRegistry(clock_tools(LocalClock("Europe/Rome", lambda: utc)))
    before = await registry.call("current_time", {})
    utc = datetime(2026, 3, 29, 1, 30, tzinfo=UTC)
    after = await registry.call("current_time", {})
    assert before == {
        "date": "2026-03-29",
        "weekday": "Sunday",
        "time": "01:30",
        "time_zone": "Europe/Rome",
        "utc_offset": "+01:00",
    }
    assert after == {
        "date": "2026-03-29",
        "weekday": "Sunday",
        "time": "03:30",
        "time_zone": "Europe/Rome",
        "utc_offset": "+02:00",
    }


async def test_the_date_is_the_users_not_utcs():
    late = LocalClock("America/Los_Angeles", lambda: datetime(2026, 11, 26, 3, 0, tzinfo=UTC))
    answer = await ToolRegistry(clock_tools(late)).call("current_time", {})
    assert (answer["date"], answer["weekday"], answer["time"]) == ("2026-11-25", "Wednesday", "19:00")
