"""`parla doctor` lists the user's MCP servers: whether each started, and its tools; never their
environment."""

from __future__ import annotations

import json
import sys

import pytest

from tests.daemon.test_cli_setup import doctor_checks, parla  # noqa: F401 - the fixture
from tests.peers import mcp_misbehaving

pytestmark = pytest.mark.tier("process")

SECRET = "mcp-token-5be2"


def test_doctor_lists_each_mcp_server_and_its_tools(parla, pulse, monkeypatch):  # noqa: F811
    servers = [
        {
            "name": "time",
            "command": sys.executable,
            "args": ["-m", "mcp_server_time"],
            "env": {"TIME_TOKEN": SECRET},
            "allow": ["get_current_time"],
        },
        {"name": "bad", "command": sys.executable, "args": [mcp_misbehaving.__file__]},
        {"name": "gone", "command": "/nonexistent/mcp-server"},
    ]
    monkeypatch.setenv("PARLA_MCP_SERVERS", json.dumps(servers))
    checks = doctor_checks(parla)
    assert checks["MCP server time"] == {
        "name": "MCP server time",
        "outcome": "ok",
        "detail": "started: get_current_time",
        "fix": "",
    }
    assert "empty_bin (asks the user first)" in checks["MCP server bad"]["detail"]
    gone = checks["MCP server gone"]
    assert gone["outcome"] == "fail" and gone["detail"] == "did not start (FileNotFoundError)"
    assert SECRET not in parla("doctor").stdout
