"""MCP benchmark: `python -m bench.mcp [--quick] [--markdown]`. Prints its figures; asserts nothing.

One `mcp-server-time` over stdio (the package from the registry, run by this Python). In the same
run, alternating call by call so both see the same machine: the bare SDK call
(`ClientSession.call_tool`) and the same call through Parla's tool dispatch (ToolRegistry →
McpTools → McpServer → the SDK), which adds argument validation, the timeout, the result cut and
the untrusted-text wrapping. p50 / p95 of each, and their difference.

Then the idle cost: this process's CPU (percent of one core) over a quiet period with no MCP
server, then with three servers connected (two mcp-server-time, the SDK-written test server), as
the daemon keeps them between conversations (pings every `mcp_ping_s`, 30 s).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from bench.report import Report, Table, parse
from parla.tools.confirmations import Confirmations, Dialogue
from parla.tools.mcp.config import McpServerConfig
from parla.tools.mcp.tools import McpTools
from parla.tools.registry import ToolRegistry
from tests.peers import mcp_misbehaving

ARGS = ["-m", "mcp_server_time", "--local-timezone", "Europe/Rome"]
CALL = {"timezone": "Asia/Tokyo"}
START_S = 60.0


async def all_running(mcp: McpTools) -> None:
    """Every server started, or the run ends naming those that did not: never a wait for good."""
    await mcp.started(START_S)
    if down := [f"{s.config.name} ({s.last_error or 'still starting'})" for s in mcp.servers if not s.running]:
        raise SystemExit(f"MCP servers not running after {START_S:g} s: {', '.join(down)}")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def main(out: Report, calls: int) -> None:
    config = McpServerConfig(name="time", command=sys.executable, args=ARGS)
    bare: list[float] = []
    parla: list[float] = []
    server = StdioServerParameters(command=sys.executable, args=ARGS)
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        async with McpTools([config]) as mcp:
            await all_running(mcp)
            registry = ToolRegistry([], more=lambda: mcp.tools(Confirmations(60, Dialogue())))
            for i in range(calls + 20):  # the first 20 warm both up
                t = time.perf_counter()
                await session.call_tool("get_current_time", CALL)
                b = time.perf_counter() - t
                t = time.perf_counter()
                answer = await registry.call("time__get_current_time", CALL)
                p = time.perf_counter() - t
                assert "untrusted_text" in answer, answer
                if i >= 20:
                    bare.append(b * 1000)
                    parla.append(p * 1000)
    table = Table(
        ["call", "p50 ms", "p95 ms"],
        title=f"MCP call to mcp-server-time over stdio, {calls} calls each, alternating, same run",
    )
    for name, values in (("bare SDK call_tool", bare), ("through Parla's dispatch", parla)):
        table.row(name, f"{statistics.median(values):.2f}", f"{percentile(values, 0.95):.2f}")
    table.row(
        "Parla adds",
        f"{statistics.median(parla) - statistics.median(bare):.2f}",
        f"{percentile(parla, 0.95) - percentile(bare, 0.95):.2f}",
    )
    out.table(table)


async def idle_cpu(servers: int, seconds: float) -> float:
    configs = [McpServerConfig(name=f"time{i}", command=sys.executable, args=ARGS) for i in range(min(servers, 2))]
    if servers > 2:
        configs.append(McpServerConfig(name="sdk", command=sys.executable, args=[mcp_misbehaving.__file__]))
    async with McpTools(configs) as mcp:
        await all_running(mcp)
        await asyncio.sleep(1)  # the start's work is over
        cpu, wall = time.process_time(), time.perf_counter()
        await asyncio.sleep(seconds)
        return 100 * (time.process_time() - cpu) / (time.perf_counter() - wall)


async def idle(out: Report, seconds: float) -> None:
    table = Table(["MCP servers connected", "CPU % of a core"], title=f"idle CPU of this process over {seconds:g} s")
    for servers in (0, 3, 0):
        table.row(servers, f"{await idle_cpu(servers, seconds):.3f}")
    out.table(table)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="50 calls instead of 500, 5 s idle instead of 60")
    args, out = parse(parser)
    asyncio.run(main(out, 50 if args.quick else 500))
    asyncio.run(idle(out, 5 if args.quick else 60))
