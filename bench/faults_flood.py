"""The flood scenario of `python -m bench.faults --scenario flood`: another local user's idle and
half-open connections to the inspector's port and the control socket while the user asks for
`status` and the page."""

from __future__ import annotations

import asyncio
import faulthandler
import multiprocessing
import os
import resource
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ProcessPoolExecutor
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from bench.faults_checks import Figures
from bench.faults_daemon import environment, start_daemon
from parla.daemon.control import CommandError, DaemonNotRunning, send_command
from tests.peers.pulse import PulseServer

FLOOD_IDLE = 1_100  # TCP connections to the inspector that send nothing
FLOOD_HALF_OPEN = 128  # control clients that send `{"cmd":` and nothing more
FLOOD_FILE_LIMIT = 1_024  # the daemon's descriptors (soft and hard), the usual desktop limit
FLOOD_SECONDS = 20.0
FLOOD_PROBE_S = 0.25  # the user's `status` this often, the inspector's page every fourth time
FLOOD_STATUS_LIMIT_S = 1.0
FLOOD_LOG_LIMIT = 1_000_000
FLOOD_PROBE_GRACE_S = 60.0  # past its time plus this, the probe process writes its stacks and ends


@dataclass
class FloodFigures(Figures):
    status_s: list[float] = field(default_factory=list)
    status_failures: int = 0  # no answer, or an error
    status_slow: int = 0  # answered later than FLOOD_STATUS_LIMIT_S
    page_s: list[float] = field(default_factory=list)
    page_failures: int = 0
    opened: int = 0  # the attackers' connections, reconnections included
    closed_by_daemon: int = 0
    descriptors_peak: int = 0  # the daemon's open files, at most
    out_of_files: bool = False  # the daemon's log says it ran out of them
    log_growth: int = 0

    @property
    def ok(self) -> bool:
        failed = self.status_failures or self.status_slow or self.page_failures or self.out_of_files
        return super().ok and not failed and self.log_growth < FLOOD_LOG_LIMIT


async def _attacker(
    connect: Callable[[], Awaitable[tuple[asyncio.StreamReader, asyncio.StreamWriter]]],
    first: bytes,
    figures: FloodFigures,
) -> None:
    """One connection held open as long as the daemon lets it, opened again a second after it is
    closed (a steady attacker), until cancelled."""
    while True:
        try:
            reader, writer = await connect()
        except OSError:
            await asyncio.sleep(1.0)
            continue
        figures.opened += 1
        try:
            writer.write(first)
            with suppress(OSError):
                await writer.drain()
                while await reader.read(4096):
                    pass
            figures.closed_by_daemon += 1
        finally:
            writer.close()
        await asyncio.sleep(1.0)


def _descriptors(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


def _probe(socket: Path, page: str, pid: int, seconds: float) -> FloodFigures:
    """What the user does meanwhile, in a process of its own as the user's `parla status` and
    browser are (in this one, the attackers' busy loop would hold the interpreter between the
    probe's connect and its request): `status` every FLOOD_PROBE_S, the inspector's page every
    fourth time, for `seconds`."""
    figures = FloodFigures("flood")

    async def probing() -> None:
        # A new connection for each page load: a browser whose kept-alive connection the
        # inspector closed to make room sends the request again on a new one, httpx does not
        # (it reports a ReadError), and that retry is not what this scenario measures.
        async with httpx.AsyncClient(limits=httpx.Limits(max_keepalive_connections=0)) as http:
            await probe_loop(socket, page, pid, figures, http, seconds)

    # Should the loop outlive its time all the same, the process writes where it is and ends: the
    # benchmark (and the test over it) then fails with the cause instead of waiting on it for good.
    faulthandler.dump_traceback_later(seconds + FLOOD_PROBE_GRACE_S, exit=True)
    try:
        asyncio.run(probing())
    finally:
        faulthandler.cancel_dump_traceback_later()
    return figures


async def probe_loop(
    socket: Path, page: str, pid: int, figures: FloodFigures, http: httpx.AsyncClient, seconds: float
) -> None:
    """The user's requests for `seconds`. The loop keeps its own deadline, and each round has a timer
    of its own: one timeout around the whole loop fires once, and a cancellation lost on the way
    (asyncio.wait_for on Python 3.11 lost one whose request was answered in the same moment) would
    leave the loop asking for good."""
    loop = asyncio.get_running_loop()
    until = loop.time() + seconds
    n = 0
    while loop.time() < until:
        with suppress(TimeoutError):
            async with asyncio.timeout_at(until):
                await _probe_once(socket, page, pid, figures, http, ask_page=n % 4 == 0)
                await asyncio.sleep(FLOOD_PROBE_S)
        n += 1


async def _probe_once(
    socket: Path, page: str, pid: int, figures: FloodFigures, http: httpx.AsyncClient, ask_page: bool
) -> None:
    figures.descriptors_peak = max(figures.descriptors_peak, _descriptors(pid))
    started = time.monotonic()
    try:
        await send_command(socket, "status", timeout=5)
        figures.status_s.append(time.monotonic() - started)
        if figures.status_s[-1] > FLOOD_STATUS_LIMIT_S:
            figures.status_slow += 1
            figures.problem(f"status took {figures.status_s[-1]:.2f} s")
    except (CommandError, DaemonNotRunning, OSError, TimeoutError) as e:
        figures.status_failures += 1
        figures.problem(f"status failed: {e!r}")
    if ask_page:
        started = time.monotonic()
        try:
            ok = (await http.get(page, timeout=5)).status_code == 200
        except httpx.HTTPError as e:
            ok = False
            figures.problem(f"the page failed: {e!r}")
        figures.page_s.append(time.monotonic() - started)
        figures.page_failures += not ok


async def _inspector_url(socket: Path) -> str:
    """The inspector's address with its token, once it serves (the socket answers before it does)."""
    loop = asyncio.get_running_loop()
    until = loop.time() + 30
    while True:
        async with asyncio.timeout_at(until):  # a timer per round: see probe_loop
            with suppress(CommandError):
                return str((await send_command(socket, "ui"))["url"])
            await asyncio.sleep(0.1)


async def connection_flood(folder: Path, pulse_server: str, seconds: float = FLOOD_SECONDS) -> FloodFigures:
    """`parla run` limited to FLOOD_FILE_LIMIT files, its inspector's port held by FLOOD_IDLE idle
    connections and its control socket by FLOOD_HALF_OPEN half-open clients for `seconds` (from
    this process: what another user could do), while the user asks for `status` and the page."""
    socket = folder / "run" / "ctl.sock"
    log = folder / "daemon.err"
    env = environment(
        folder,
        PULSE_SERVER=pulse_server,
        PARLA_CONTROL_SOCKET=str(socket),
        PARLA_ACTIVATION="push_to_talk",
        PARLA_CUES="false",
        GEMINI_API_KEY="unused-key",  # no session opens: nothing but the store and the sockets is used
        PARLA_GEMINI_BASE_URL="http://127.0.0.1:9",
        PARLA_LIVE_URL="https://127.0.0.1:9",
    )
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = FLOOD_IDLE + FLOOD_HALF_OPEN + 256
    if soft < needed <= hard or hard == resource.RLIM_INFINITY:  # the attackers' side needs them all
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, needed), hard))
    figures = FloodFigures("flood", runs=1)
    proc = await start_daemon(env, socket, log)
    try:
        resource.prlimit(proc.pid, resource.RLIMIT_NOFILE, (FLOOD_FILE_LIMIT, FLOOD_FILE_LIMIT))
        page = await _inspector_url(socket)
        port = int(page.split("/")[2].rsplit(":", 1)[1])
        log_before = log.stat().st_size
        async with asyncio.TaskGroup() as group:
            tasks = [
                group.create_task(_attacker(lambda: asyncio.open_connection("127.0.0.1", port), b"", figures))
                for _ in range(FLOOD_IDLE)
            ]
            tasks += [
                group.create_task(_attacker(lambda: asyncio.open_unix_connection(str(socket)), b'{"cmd":', figures))
                for _ in range(FLOOD_HALF_OPEN)
            ]
            with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
                probed = await asyncio.get_running_loop().run_in_executor(pool, _probe, socket, page, proc.pid, seconds)
            for name in ("status_s", "status_failures", "status_slow", "page_s", "page_failures", "descriptors_peak"):
                setattr(figures, name, getattr(probed, name))
            for text in probed.problems:
                figures.problem(text)
            for task in tasks:
                task.cancel()
        await send_command(socket, "stop")
        async with asyncio.timeout(30):
            await proc.wait()
        if proc.returncode != 0:
            figures.problem(f"the daemon exited with {proc.returncode}")
        figures.log_growth = log.stat().st_size - log_before
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    figures.out_of_files = "Too many open files" in log.read_text(errors="replace")
    figures.note = (
        f"{FLOOD_IDLE:,} idle inspector connections and {FLOOD_HALF_OPEN} half-open control clients for "
        f"{seconds:.0f} s, the daemon limited to {FLOOD_FILE_LIMIT:,} files: `status` {_spread(figures.status_s)}, "
        f"{figures.status_slow} over {FLOOD_STATUS_LIMIT_S:.0f} s, {figures.status_failures} failed; the page "
        f"{_spread(figures.page_s)}, {figures.page_failures} failed; attackers' connections opened "
        f"{figures.opened:,}, closed by the daemon {figures.closed_by_daemon:,}; the daemon's open files at most "
        f"{figures.descriptors_peak}{' (it ran out)' if figures.out_of_files else ''}; log +{figures.log_growth:,} bytes"
    )
    return figures


def _spread(seconds: list[float]) -> str:
    if not seconds:
        return "never answered"
    ordered = sorted(seconds)
    return f"n={len(ordered)} median {ordered[len(ordered) // 2] * 1000:.0f} ms, max {ordered[-1] * 1000:.0f} ms"


async def flood_suite(root: Path) -> Figures:
    pulse = PulseServer(root / "pulse-flood").start()
    try:
        return await connection_flood(root / "flood", pulse.env["PULSE_SERVER"])
    finally:
        pulse.stop()
