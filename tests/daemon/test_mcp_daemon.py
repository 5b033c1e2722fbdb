"""The daemon and the user's MCP servers: the first session after `parla run`, opened while a
server is still starting, waits for its tools (bounded; a server that failed is not waited for);
`parla status` says what the running daemon holds, and `parla doctor` compares it with the config
file. The Live emulator, the virtual audio devices, a real SQLite store and real MCP servers."""

from __future__ import annotations

import asyncio
import json
import sys

import pytest
from typer.testing import CliRunner

from parla.daemon.cli import app
from parla.daemon.control import send_command
from parla.tools.mcp.config import McpServerConfig
from tests.conftest import eventually
from tests.daemon.conftest import running
from tests.peers import mcp_misbehaving
from tests.peers.live_emulator import echo

pytestmark = pytest.mark.tier("audio")


def bad_server(start_delay_s: float = 0.0) -> McpServerConfig:
    return McpServerConfig(
        name="bad",
        command=sys.executable,
        args=[mcp_misbehaving.__file__],
        env={"MISBEHAVING_START_DELAY_S": str(start_delay_s)},
        allow=["has_token"],
        start_timeout_s=20,
    )


GONE = McpServerConfig(name="gone", command="/nonexistent/mcp-server")


def declared(conn) -> set[str]:
    return {d["name"] for tool in conn.setup.get("tools") or [] for d in tool["function_declarations"]}


async def test_the_first_session_waits_for_a_server_still_starting(daemon_settings, live):
    live.script = echo
    settings = daemon_settings.model_copy(update={"mcp_servers": [bad_server(start_delay_s=2.0), GONE]})
    async with running(settings):
        status = await send_command(settings.control_socket, "status")
        assert status["mcp_servers"][0] == {
            "name": "bad",
            "state": "starting",
            "tools": [],
            "last_error": None,
            "settings": settings.mcp_servers[0].fingerprint(),
        }
        assert status["session_tools"] is None
        assert (await send_command(settings.control_socket, "say", text="what is in the bin?"))[
            "result"
        ] == "activating"
        first = await live.wait_connections(1, timeout=30)
        assert "bad__has_token" in declared(first)  # opened once the server ran
        status = await send_command(settings.control_socket, "status")
        servers = {m["name"]: m for m in status["mcp_servers"]}
        assert servers["bad"]["state"] == "running" and servers["bad"]["tools"] == ["has_token"]
        # the server that cannot start was not waited for, and says why
        assert servers["gone"]["state"] == "restarting" and servers["gone"]["last_error"] == "FileNotFoundError"
        assert "bad__has_token" in status["session_tools"] and "delete_chat" in status["session_tools"]
        shown = await asyncio.to_thread(
            CliRunner().invoke, app, ["status"], env={"PARLA_CONTROL_SOCKET": str(settings.control_socket)}
        )
        assert "MCP servers: bad running (1 tools), gone restarting after FileNotFoundError" in shown.stdout


async def test_doctor_says_what_the_running_daemon_holds(daemon_settings, live, tmp_path):
    settings = daemon_settings.model_copy(update={"mcp_servers": [bad_server(), GONE]})
    async with running(settings):

        async def settled() -> bool:
            status = await send_command(settings.control_socket, "status")
            return all(m["state"] != "starting" for m in status.get("mcp_servers", []))

        await eventually(settled, timeout=20, what="the servers to start or fail")
        # the config file now: the same bad server, a new one, and gone no longer
        time_server = {"name": "time", "command": sys.executable, "args": ["-m", "mcp_server_time"]}
        config = [json.loads(bad_server().model_dump_json()) | {"env": {"MISBEHAVING_START_DELAY_S": "0.0"}}]
        env = {
            "PARLA_CONTROL_SOCKET": str(settings.control_socket),
            "PARLA_CONFIG_FILE": str(tmp_path / "none.toml"),
            "PARLA_STORE_PATH": str(settings.store_path),
            "PARLA_MCP_SERVERS": json.dumps(config + [time_server]),
        }
        done = await asyncio.to_thread(CliRunner().invoke, app, ["doctor", "--json"], env=env)
    checks = {c["name"]: c for c in json.loads(done.stdout)}
    assert checks["MCP server bad"]["outcome"] == "ok"
    assert checks["MCP server bad"]["detail"] == "running in the daemon: has_token"
    added = checks["MCP server time"]
    assert added["outcome"] == "warn" and added["detail"].startswith(
        "in the config file, not in the running daemon; started: "
    )
    assert "restart the daemon" in added["fix"]
    gone = checks["MCP server gone"]
    assert (gone["outcome"], gone["detail"]) == ("warn", "the running daemon has it; the config file no longer does")
