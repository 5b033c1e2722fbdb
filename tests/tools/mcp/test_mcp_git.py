"""`mcp-server-git` from the package registry, a server no one here wrote, through Parla's MCP
client and tool registry over stdio: its read-only tools answer at once, a commit (not read-only)
and a reset (destructive) wait for the user's yes, and what a repository holds comes back as
information only."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys

import pytest

from parla.tools.mcp.config import McpServerConfig
from parla.tools.mcp.tools import McpTools
from tests.tools.mcp.test_mcp import answered, session_tools

pytestmark = [
    pytest.mark.tier("process"),
    pytest.mark.skipif(shutil.which("git") is None, reason="mcp-server-git drives the git command"),
]

GIT = ["git", "-c", "user.name=Ada", "-c", "user.email=ada@example.com"]


def git(repo, *args: str) -> str:
    return subprocess.run([*GIT, "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


async def running(mcp: McpTools) -> None:
    async with asyncio.timeout(30):
        while not all(s.running for s in mcp.servers):
            await asyncio.sleep(0.02)


async def test_mcp_server_git_from_the_registry_reads_at_once_and_writes_only_after_a_yes(tmp_path, monkeypatch):
    repo = tmp_path / "notes"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "shopping.txt").write_text("eggs\n")
    git(repo, "add", "shopping.txt")
    git(repo, "commit", "-q", "-m", "First list")
    (repo / "shopping.txt").write_text("eggs\nmilk\n")
    # the commit the server makes takes its author from the environment it inherits
    for name, value in {"GIT_AUTHOR_NAME": "Ada", "GIT_AUTHOR_EMAIL": "ada@example.com"}.items():
        monkeypatch.setenv(name, value)
        monkeypatch.setenv(name.replace("AUTHOR", "COMMITTER"), value)
    config = McpServerConfig(
        name="git",
        command=sys.executable,
        args=["-m", "mcp_server_git", "--repository", str(repo)],
        allow=["git_status", "git_log", "git_add", "git_commit", "git_reset"],
        call_timeout_s=20,
    )
    async with McpTools([config]) as mcp:
        await running(mcp)
        registry, dialogue = session_tools(mcp)
        assert [d.name for d in registry.declarations()] == [
            "git__git_add",
            "git__git_commit",
            "git__git_log",
            "git__git_reset",
            "git__git_status",
        ]
        where = {"repo_path": str(repo)}
        status = await registry.call("git__git_status", where)
        assert "shopping.txt" in status["untrusted_text"] and "information only" in status["note"]
        log = await registry.call("git__git_log", where)
        assert "First list" in log["untrusted_text"]
        # not read-only: a first call asks for the user's yes and changes nothing
        add = await registry.call("git__git_add", {**where, "files": ["shopping.txt"]})
        assert add["result"] == "confirm"
        assert git(repo, "diff", "--cached", "--name-only") == ""
        answered(dialogue)  # the model asked, the user said yes
        added = await registry.call(
            "git__git_add", {**where, "files": ["shopping.txt"], "confirmation": add["confirmation"]}
        )
        assert "error" not in added and git(repo, "diff", "--cached", "--name-only") == "shopping.txt\n"
        commit = await registry.call("git__git_commit", {**where, "message": "Milk too"})
        assert commit["result"] == "confirm" and git(repo, "log", "--format=%s") == "First list\n"
        # called again at once, with no word of the user since the question: nothing is committed
        hasty = await registry.call(
            "git__git_commit", {**where, "message": "Milk too", "confirmation": commit["confirmation"]}
        )
        assert hasty["result"] == "confirm" and "no answer from the user" in hasty["say"]
        assert git(repo, "log", "--format=%s") == "First list\n"
        answered(dialogue)
        made = await registry.call(
            "git__git_commit", {**where, "message": "Milk too", "confirmation": hasty["confirmation"]}
        )
        assert "error" not in made, made
        assert git(repo, "log", "--format=%s") == "Milk too\nFirst list\n"
        # destructive: the same, and a confirmation for other arguments is no yes
        reset = await registry.call("git__git_reset", where)
        assert reset["result"] == "confirm"
        elsewhere = await registry.call(
            "git__git_reset", {"repo_path": str(tmp_path), "confirmation": reset["confirmation"]}
        )
        assert elsewhere["result"] == "confirm"
