"""`current_time`: the user's local date, weekday, time and zone now. The system instruction says
when the session began; a session that lasts hours asks this for the time now."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from parla.kernel.local_time import LocalClock

from .registry import Tool


class NoArgs(BaseModel):
    pass


def clock_tools(clock: LocalClock) -> list[Tool]:
    async def current_time(_: NoArgs) -> dict[str, Any]:
        return clock.now().as_answer()

    return [
        Tool(
            "current_time",
            "The user's local date, weekday, time and time zone now. Call it whenever the date or time matters "
            "(what time or day it is, how long until something, a date the user says relative to today).",
            NoArgs,
            current_time,
            timeout=1.0,
        )
    ]
