"""The user's local date and time in a Live session that lasts hours, through the Live emulator and
the real SDK: the clock is moved by hours between connections and between tool calls."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from parla.kernel.local_time import LocalClock
from parla.tools.clock import clock_tools
from parla.tools.registry import ToolRegistry
from tests.voice.live.test_live import conversation, new_chat

pytestmark = pytest.mark.tier("fast")


class MovedClock:
    """UTC time that a test moves on by hours; the session reads it as its clock."""

    def __init__(self, start: datetime) -> None:
        self.at = start

    def __call__(self) -> datetime:
        return self.at


async def test_the_session_knows_the_local_time_and_stays_right_hours_later(live, live_client, voice_config, store):
    chat = await new_chat(store)
    utc = MovedClock(datetime(2026, 11, 25, 9, 30, tzinfo=UTC))  # a Wednesday; Rome is UTC+1 in November
    clock = LocalClock("Europe/Rome", utc)
    answers: list[dict] = []

    async def script(conn):
        await conn.complete_setup()
        await conn.resumption(f"handle-{conn.index}")
        await conn.tool_call({"id": f"t{conn.index}", "name": "current_time", "args": {}})
        answers.append((await conn.expect("tool_response")).body["function_responses"][0]["response"])
        if conn.index == 0:
            utc.at += timedelta(hours=3, minutes=5)
            await conn.go_away(30)
        await conn.closed.wait()

    live.script = script
    async with conversation(
        live_client, voice_config, store, chat.id, tools=ToolRegistry(clock_tools(clock)), clock=clock
    ):
        second = await live.wait_connections(2)
        await asyncio.wait_for(_answered(answers, 2), 5)
    first = live.connections[0]
    assert (
        "Wednesday 25 November 2026, 10:30 (2026-11-25, time zone Europe/Rome, UTC+01:00)" in first.system_instruction
    )
    assert "current_time" in [d["name"] for d in first.setup["tools"][0]["function_declarations"]]
    # three hours on, the GoAway's resumed session is told the time of its own connection
    assert second.handle == "handle-0"
    assert "Wednesday 25 November 2026, 13:35" in second.system_instruction
    assert answers == [
        {
            "date": "2026-11-25",
            "weekday": "Wednesday",
            "time": "10:30",
            "time_zone": "Europe/Rome",
            "utc_offset": "+01:00",
        },
        {
            "date": "2026-11-25",
            "weekday": "Wednesday",
            "time": "13:35",
            "time_zone": "Europe/Rome",
            "utc_offset": "+01:00",
        },
    ]


async def _answered(answers: list, n: int) -> None:
    while len(answers) < n:
        await asyncio.sleep(0.01)
