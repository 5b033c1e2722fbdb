"""The documentation cannot drift from the code: the generated references are what the code makes
now, and every error line the troubleshooting page quotes is still printed by the code."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from parla.daemon import docs

pytestmark = pytest.mark.tier("fast")

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("parla", "daemon", "memory", "voice", "tools", "ui")


def test_generated_references_are_up_to_date():
    stale = docs.outdated(ROOT)
    assert not stale, f"out of date: {[str(p) for p in stale]}; run `python -m parla.daemon.docs`"


@pytest.mark.tier("process")
def test_the_check_names_a_stale_page_and_fails(tmp_path):
    docs.write(tmp_path)
    page = tmp_path / docs.REFERENCE / "settings.md"
    page.write_text(page.read_text().replace("`PARLA_TAIL`", "`PARLA_TALE`"))
    done = subprocess.run(
        [sys.executable, "-m", "parla.daemon.docs", "--check"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 1
    assert "settings.md is out of date" in done.stderr and "commands.md" not in done.stderr


def test_every_setting_command_and_answer_field_is_in_the_references():
    from parla.daemon.protocol import StatusAnswer
    from parla.daemon.settings import Settings

    settings = (ROOT / docs.REFERENCE / "settings.md").read_text()
    assert all(f"| `{name}` |" in settings for name in Settings.model_fields)
    commands = (ROOT / docs.REFERENCE / "commands.md").read_text()
    for command in ("parla import", "parla memory restore", "parla service install", "parla talk"):
        assert f"## `{command}`" in commands
    protocol = (ROOT / docs.REFERENCE / "protocol.md").read_text()
    assert all(f"| `{name}` |" in protocol for name in StatusAnswer.model_fields)


def _code() -> str:
    """The source with adjacent string literals joined and f-string fields as `…`, the way the
    page writes the part of a line that varies."""
    text = "\n".join(p.read_text() for d in SOURCES for p in sorted((ROOT / d).rglob("*.py")))
    text = re.sub(r'"\s*\n\s*f?"', "", text)
    return re.sub(r"\{[^{}]*\}", "…", text)


def test_each_error_the_troubleshooting_page_quotes_is_printed_by_the_code():
    page = (ROOT / "docs/guides/troubleshooting.md").read_text()
    quoted = [m.group(1) or m.group(2) for m in re.finditer(r"^### (?:`` (.+) ``|`([^`]+)`)$", page, re.MULTILINE)]
    assert len(quoted) >= 20
    code = _code()
    missing = [line for line in quoted if not all(piece in code for piece in line.split("…"))]
    assert not missing, f"the page quotes lines the code no longer prints: {missing}"


def test_the_readme_links_only_to_files_that_exist():
    readme = (ROOT / "README.md").read_text()
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", readme)
    assert targets, "the README links into docs/"
    missing = [t for t in targets if "://" not in t and not (ROOT / t).exists()]
    assert not missing, missing
    assert len(readme.splitlines()) <= 200


def test_the_mcp_guide_example_is_a_config_that_loads_and_leaves_parla_its_port(tmp_path, monkeypatch):
    # its HTTP server listened on 8765, the memory inspector's own port (issue 42, item 22)
    from urllib.parse import urlsplit

    from parla.daemon.settings import Settings
    from parla.daemon.settings_sources import load

    page = (ROOT / "docs/guides/tools.md").read_text()
    (example,) = re.findall(r"```toml\n(.*?)```", page, re.DOTALL)
    (tmp_path / "config.toml").write_text(example)
    monkeypatch.setenv("PARLA_CONFIG_FILE", str(tmp_path / "config.toml"))
    monkeypatch.chdir(tmp_path)
    servers = load().mcp_servers
    assert [s.name for s in servers] == ["time", "notes", "git"]
    ports = [urlsplit(s.url).port for s in servers if s.url]
    assert ports and Settings.model_fields["ui_port"].default not in ports
