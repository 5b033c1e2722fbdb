"""The flood benchmark's probe (bench/faults_flood.py) ends at its time whatever its requests do: a
loop bounded only by one timeout around it ran on for good when that timeout's cancellation was
lost (a fresh clone's CI hung 20 minutes in tests/daemon/test_faults.py on it)."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from bench.faults_flood import FloodFigures, probe_loop
from parla.daemon.control import ControlServer

pytestmark = pytest.mark.tier("fast")


async def _status(cmd: str, request: dict[str, Any]) -> dict[str, Any]:
    return {"state": "idle"}


async def test_the_probe_ends_at_its_time_when_a_request_loses_the_cancellation(tmp_path):
    """The page's server here answers a request cancelled under it as if nothing happened (as a
    library that loses a cancellation does): the loop's own deadline still ends it."""
    lost = 0

    async def page_that_loses_the_cancellation(request: httpx.Request) -> httpx.Response:
        nonlocal lost
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            if lost:  # only the first: the test's own limit must still work
                raise
            lost += 1
        return httpx.Response(200)

    path = tmp_path / "ctl.sock"
    figures = FloodFigures("flood")
    async with (
        ControlServer(path, _status),
        httpx.AsyncClient(transport=httpx.MockTransport(page_that_loses_the_cancellation)) as http,
    ):
        async with asyncio.timeout(10):
            await probe_loop(path, "http://page/", 0, figures, http, seconds=0.5)
    assert lost == 1  # the first page request was under way when the time was up
    assert figures.status_s and figures.status_failures == 0
