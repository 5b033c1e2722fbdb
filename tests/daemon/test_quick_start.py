"""The quick start's commands that need neither a key nor a microphone run as written, in a fresh
home, through the installed entry point: what a newcomer types first works."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import SEARCH_EMBED_TIMEOUT_S

pytestmark = pytest.mark.tier("process")

ROOT = Path(__file__).resolve().parents[2]
PAGES = ("README.md", "docs/guides/install.md")
# What runs offline with no daemon; `parla run`, `switch`, `talk`, `ui` need a key, the daemon or a browser.
OFFLINE = {"--version", "import", "chats", "search", "stats", "show", "export"}


def quick_start(page: str) -> list[list[str]]:
    """The `parla` lines of the page's quick start code blocks, as argument lists (`bash
    scripts/run.sh ARGS` runs `parla ARGS` once it has installed Parla)."""
    text = (ROOT / page).read_text()
    section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)```", section, re.DOTALL)
    lines = [shlex.split(line, comments=True) for block in blocks for line in block.splitlines()]
    commands = [words[1:] for words in lines if words[:1] == ["parla"]]
    return commands + [words[2:] for words in lines if words[:2] == ["bash", "scripts/run.sh"] and words[2:]]


def test_the_quick_start_commands_run_offline(tmp_path):
    home = tmp_path / "home"
    (home / "Downloads").mkdir(parents=True)
    with zipfile.ZipFile(home / "Downloads/chatgpt-export.zip", "w") as archive:
        archive.write(ROOT / "tests/data/imports/chatgpt_conversations.json", "conversations.json")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PARLA_", "XDG_")) and "API_KEY" not in k}
    env |= {
        "HOME": str(home),
        "XDG_DATA_HOME": str(home / ".local/share"),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "PARLA_SEARCH_EMBED_TIMEOUT_S": str(SEARCH_EMBED_TIMEOUT_S),
        "COLUMNS": "200",  # the tables keep each title on one line
    }

    def parla(args: list[str]) -> str:
        args = [str(home / a[2:]) if a.startswith("~/") else a for a in args]
        done = subprocess.run(
            [sys.executable, "-m", "parla.daemon", *args],
            cwd=home,
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
        )
        assert done.returncode == 0, f"parla {shlex.join(args)}: {done.stderr}"
        return done.stdout

    ran = {}
    for page in PAGES:
        for args in quick_start(page):
            if args[0] in OFFLINE:
                ran[args[0]] = parla(args)
    assert {"--version", "import", "chats", "search"} <= set(ran), ran.keys()
    assert ran["--version"].startswith("parla ")
    assert "Sourdough timing" in ran["chats"] and "Gift ideas for Mom's 60th birthday" in ran["chats"]
    assert "Sourdough timing" in ran["search"]
