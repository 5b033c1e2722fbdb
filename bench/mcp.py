"""MCP benchmark: `python -m bench.mcp [--quick]`. Prints its figures; asserts nothing.

One `mcp-server-time` over stdio (the package from the registry, run by this Python). In the same
run, alternating call by call so both see the same machine: the bare SDK call
(`ClientSession.call_tool`) and the same call through Parla's tool dispatch (ToolRegistry →
McpTools → McpServer → the SDK), which adds argument validation, the timeout, the result cut and
the untrusted-text wrapping. p50 / p95 of each, and their difference.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from parla.tools.mcp_config import McpServerConfig
from parla.tools.mcp_tools import McpTools
from parla.tools.registry import ToolRegistry

ARGS = ["-m", "mcp_server_time", "--local-timezone", "Europe/Rome"]
CALL = {"timezone": "Asia/Tokyo"}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def main(calls: int) -> None:
    config = McpServerConfig(name="time", command=sys.executable, args=ARGS)
    bare: list[float] = []
    parla: list[float] = []
    server = StdioServerParameters(command=sys.executable, args=ARGS)
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        async with McpTools([config], confirm_s=60) as mcp:
            while not mcp.servers[0].running:
                await asyncio.sleep(0.01)
            registry = ToolRegistry([], more=mcp.tools)
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
    print(f"MCP call to mcp-server-time over stdio, {calls} calls each, alternating, same run:")
    for name, values in (("bare SDK call_tool", bare), ("through Parla's dispatch", parla)):
        print(f"  {name:26s} p50 {statistics.median(values):6.2f} ms   p95 {percentile(values, 0.95):6.2f} ms")
    print(
        f"  Parla adds                 p50 {statistics.median(parla) - statistics.median(bare):6.2f} ms   "
        f"p95 {percentile(parla, 0.95) - percentile(bare, 0.95):6.2f} ms"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="50 calls instead of 500")
    asyncio.run(main(50 if parser.parse_args().quick else 500))
