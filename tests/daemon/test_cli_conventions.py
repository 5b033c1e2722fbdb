"""What every command line tool is expected to do: --version, completion, -v/-q, grouped help,
one-line usage errors, exit codes, a quiet broken pipe, `parla config`, `parla devices`, and a
start-up that does not load the cloud SDKs for commands that do not use them."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from parla.daemon import cli
from parla.daemon.cli import app

pytestmark = pytest.mark.tier("fast")


@pytest.fixture
def env(tmp_path, monkeypatch):
    monkeypatch.setenv("PARLA_STORE_PATH", str(tmp_path / "parla.db"))
    monkeypatch.setenv("PARLA_CONFIG_FILE", str(tmp_path / "config.toml"))
    monkeypatch.setenv("PARLA_CONTROL_SOCKET", str(tmp_path / "ctl.sock"))
    for key in list(os.environ):
        if key.startswith("PARLA_") and key not in ("PARLA_STORE_PATH", "PARLA_CONFIG_FILE", "PARLA_CONTROL_SOCKET"):
            monkeypatch.delenv(key)
    for key in ("GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def parla(*args: str):
    return CliRunner().invoke(app, list(args))


def script(monkeypatch, capsys, *args: str) -> tuple[int, str, str]:
    """What the installed `parla` script runs (parla.daemon.cli.main), in this process."""
    monkeypatch.setattr(sys, "argv", ["parla", *args])
    with pytest.raises(SystemExit) as done:
        cli.main()
    captured = capsys.readouterr()
    return done.value.code, captured.out, captured.err


def test_version_help_groups_and_completion(env):
    assert parla("--version").stdout == "parla 0.1.0\n"
    shown = parla("--help").stdout
    for group in ("Talk to Parla", "Chats", "Memory", "Setup"):
        assert group in shown
    assert "--install-completion" in shown and "--verbose" in shown and "--quiet" in shown
    assert "ChatGPT" in parla("import", "--help").stdout  # the formats it reads


def test_usage_lines_name_arguments_in_capitals(env):
    # typer's usage line read `parla show [OPTIONS] {chat}` (issue 42, item 23)
    from typer.main import get_command

    from parla.daemon.docs import commands_page

    def commands(command, path):
        for name, sub in getattr(command, "commands", {}).items():
            yield [*path, name], sub
            yield from commands(sub, [*path, name])

    wanted = {
        "show": "parla show [OPTIONS] CHAT",
        "import": "parla import [OPTIONS] FILE",
        "export": "parla export [OPTIONS] [CHATS...]",
        "rm": "parla rm [OPTIONS] CHATS...",
        "memory restore": "parla memory restore [OPTIONS] CHAT NUMBERS...",
    }
    for path, command in commands(get_command(app), []):
        shown = CliRunner().invoke(app, [*path, "--help"], prog_name="parla").stdout
        usage = " ".join(next(line for line in shown.splitlines() if "Usage:" in line).split()[1:])
        assert "{" not in usage and "[OPTIONS]" in usage, usage
        if " ".join(path) in wanted:
            assert usage == wanted[" ".join(path)]
            assert f"\n{usage}\n" in commands_page()  # the reference spells it the same
    assert "'CHAT'" in parla("show").stderr


def test_usage_errors_are_one_line(env, monkeypatch, capsys):
    code, out, err = script(monkeypatch, capsys, "show")
    assert (code, out) == (2, "")
    assert err.lower() == "parla: error: missing argument 'chat'; `parla show --help` shows the usage\n"
    code, _, err = script(monkeypatch, capsys, "chats", "--limit", "zero")
    assert code == 2 and err.startswith("parla: error: Invalid value for '--limit'") and err.count("\n") == 1
    code, out, _ = script(monkeypatch, capsys)  # no command: the help, and success
    assert code == 0 and "Usage: parla" in out


def test_status_json_without_a_daemon(env):
    result = parla("status", "--json")
    assert result.exit_code == 1 and json.loads(result.stdout) == {"running": False}


@pytest.mark.tier("process")
def test_a_reader_that_goes_away_is_not_an_error(env):
    proc = subprocess.Popen(
        [sys.executable, "-m", "parla.daemon", "config", "show"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    proc.stdout.close()  # as `parla config show | head -0` does
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 1 and err == b""


def test_config_show_says_where_each_value_came_from(env, monkeypatch):
    (env / "config.toml").write_text("tail = 5\n")
    (env / ".env").write_text("PARLA_SUMMARY_WINDOW_SIZE=25\n")
    monkeypatch.setenv("GEMINI_API_KEY", "AIza-very-secret")
    shown = json.loads(parla("-v", "config", "show", "--json").stdout)
    assert shown["tail"] == {"value": 5, "source": "file", "where": f"{env / 'config.toml'}, line 1"}
    assert shown["summary_window_size"] == {"value": 25, "source": ".env", "where": "PARLA_SUMMARY_WINDOW_SIZE"}
    assert shown["gemini_api_key"] == {"value": "********", "source": "environment", "where": "GEMINI_API_KEY"}
    assert shown["log_level"] == {"value": "INFO", "source": "command line", "where": "-v/-q"}
    assert shown["chunk_size"] == {"value": 10, "source": "default"}
    text = parla("config", "show").stdout
    assert "AIza" not in text and f"tail = 5  # {env / 'config.toml'}, line 1" in text
    assert parla("config", "path").stdout == f"{env / 'config.toml'}\n"


MCP_CONFIG = """tail = 5

[[mcp_servers]]
name = "files"
command = "npx"
args = ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]
env = { TOKEN = "very-secret-token" }

[[mcp_servers]]
name = "notes"
url = "http://127.0.0.1:8000/mcp"
call_timeout_s = 10
"""


def test_config_show_prints_the_mcp_servers_as_toml_with_their_secrets_masked(env):
    # any [[mcp_servers]] entry crashed it: "Object of type McpServerConfig is not JSON serializable" (issue 42, item 5)
    import tomllib

    (env / "config.toml").write_text(MCP_CONFIG)
    shown = parla("config", "show", "--json")
    assert shown.exit_code == 0, shown.output
    servers = json.loads(shown.stdout)["mcp_servers"]
    assert servers["source"] == "file" and servers["where"] == f"{env / 'config.toml'}, line 3"
    files, notes = servers["value"]
    assert files["name"] == "files" and files["env"] == {"TOKEN": "********"} and files["url"] is None
    assert notes["url"] == "http://127.0.0.1:8000/mcp" and notes["call_timeout_s"] == 10
    text = parla("config", "show")
    assert text.exit_code == 0, text.output
    assert "very-secret" not in text.stdout + shown.stdout
    # the lines are the config file's own syntax: copied into one, they give the same servers
    lines = text.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("mcp_servers = "))
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("]"))
    read = tomllib.loads("\n".join(lines[start : end + 1]))["mcp_servers"]
    assert [s["name"] for s in read] == ["files", "notes"] and read[0]["env"] == {"TOKEN": "********"}
    assert read[0]["args"][-1] == "/tmp" and "url" not in read[0] and read[1]["call_timeout_s"] == 10
    assert lines[start].endswith(f"# {env / 'config.toml'}, line 3")


def test_config_show_set_lists_only_what_was_set_and_where(env, monkeypatch):
    # 167 lines, nearly all defaults, hid the few the user set (issue 42, item 19)
    (env / "config.toml").write_text(MCP_CONFIG)
    monkeypatch.setenv("GEMINI_API_KEY", "AIza-very-secret")
    full = parla("config", "show").stdout
    assert len(full.splitlines()) > 150
    assert "5 settings are set; `parla config show --set` lists only them" in full
    given = json.loads(parla("config", "show", "--set", "--json").stdout)
    assert sorted(given) == ["control_socket", "gemini_api_key", "mcp_servers", "store_path", "tail"]
    assert given["tail"] == {"value": 5, "source": "file", "where": f"{env / 'config.toml'}, line 1"}
    text = parla("config", "show", "--set").stdout
    assert f"tail = 5  # {env / 'config.toml'}, line 1" in text
    assert 'gemini_api_key = "********"  # GEMINI_API_KEY in the environment' in text
    assert "chunk_size" not in text and "AIza" not in text and len(text.splitlines()) < 15
    (env / "config.toml").unlink()
    for key in ("PARLA_STORE_PATH", "PARLA_CONTROL_SOCKET", "GEMINI_API_KEY"):
        monkeypatch.delenv(key)
    nothing = parla("config", "show", "--set").stdout
    assert nothing.startswith("Every setting has its default value")


def test_quiet_hides_warnings_and_verbose_logs(env, monkeypatch):
    monkeypatch.setenv("PARLA_TALE", "5")
    assert "did you mean PARLA_TAIL?" in parla("stats").stderr
    assert parla("-q", "stats").stderr == ""
    broken = parla("-q", "show", "nope")
    assert broken.exit_code == 1 and "no chat matches 'nope'" in broken.stderr  # errors still print


@pytest.mark.tier("audio")
def test_devices_lists_what_parla_would_use(env, pulse):
    result = parla("devices", "--json")
    assert result.exit_code == 0, result.output
    devices = json.loads(result.stdout)
    assert any("input" in d["used_for"] for d in devices) and any("output" in d["used_for"] for d in devices)
    assert "Parla uses it for" in parla("devices").stdout


@pytest.mark.tier("process")
@pytest.mark.parametrize("args", [["--version"], ["--help"], ["status", "--json"], ["config", "path"]])
def test_commands_without_the_cloud_start_without_its_sdks(env, args):
    """Not a timed test: the figure is printed (pytest -s) and `bench/cli_startup.py` compares it
    with a bare interpreter; what is asserted is that the SDKs are not imported at all."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "parla.daemon", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == (1 if args[0] == "status" else 0), done.stderr[-2000:]  # no daemon runs
    imported = {line.rsplit("|", 1)[-1].strip(): line for line in done.stderr.splitlines() if "|" in line}
    heavy = [m for m in ("google.genai", "supabase", "numpy", "sounddevice", "aiosqlite", "wordllama") if m in imported]
    assert heavy == []
    total_us = int(imported["parla.daemon.cli"].split("|")[1])
    print(f"parla {' '.join(args)}: daemon.cli imports in {total_us / 1000:.0f} ms")


def test_bracketed_text_is_printed_as_it_is(env, monkeypatch):
    monkeypatch.setenv("PARLA_STORE_PATH", "[red]/parla.db")  # relative to the test's folder
    assert parla("stats").stdout.startswith("Store: SQLite [red]/parla.db\n")


@pytest.mark.tier("process")
def test_a_bug_shows_its_traceback_and_a_user_error_one_line(env):
    """A ValueError or OSError in a command is a bug, not a message for the user: it keeps its
    traceback. A ParlaError is the user's to fix and is one line."""
    script = (
        "import sys\n"
        "from parla.daemon.cli import app, main\n"
        "from parla.daemon.cli.support import command\n"
        "from parla.daemon.errors import ParlaError\n"
        "@app.command('fails')\n"
        "@command\n"
        "def fails(kind: str) -> None:\n"
        "    raise {'bug': ValueError, 'os': OSError, 'user': ParlaError}[kind]('what went wrong')\n"
        "main()\n"
    )
    for kind in ("bug", "os"):
        done = subprocess.run(
            [sys.executable, "-c", script, "fails", kind], capture_output=True, text=True, timeout=60, check=False
        )
        assert done.returncode == 1 and "Traceback" in done.stderr and "what went wrong" in done.stderr
    done = subprocess.run(
        [sys.executable, "-c", script, "fails", "user"], capture_output=True, text=True, timeout=60, check=False
    )
    assert (done.returncode, done.stderr) == (1, "parla: error: what went wrong\n")


def test_config_show_gives_the_value_used_where_the_default_comes_from_elsewhere(env, monkeypatch):
    """A threshold left unset is the embedder's own calibration, a path follows another setting:
    `config show` prints the value in use and whose it is, not "(not set)"."""
    shown = json.loads(parla("config", "show", "--json").stdout)
    assert shown["search_min_match"] == {"value": 0.4, "source": "default", "where": "the offline embedder's own"}
    assert shown["search_switch_score"]["value"] == 0.48 and shown["title_drift_distance"]["value"] == 0.8
    assert shown["supabase_copy_path"]["value"] == str(env / "supabase-copy.db")
    assert shown["vad_silence_ms"] == {"value": None, "source": "default", "where": "the model's own"}
    text = parla("config", "show").stdout
    assert "search_min_match = 0.4  # the default: the offline embedder's own\n" in text
    assert "vad_silence_ms = (not set)  # the default: the model's own\n" in text
    assert "search_switch_margin = (not set)" not in text
    monkeypatch.setenv("GEMINI_API_KEY", "AIza-a-key")  # `auto` is Gemini now, with its own calibration
    with_key = json.loads(parla("config", "show", "--json").stdout)
    assert with_key["search_min_match"] == {"value": 0.6, "source": "default", "where": "the Gemini embedder's own"}
    monkeypatch.setenv("PARLA_SEARCH_MIN_MATCH", "0.5")
    assert json.loads(parla("config", "show", "--json").stdout)["search_min_match"] == {
        "value": 0.5,
        "source": "environment",
        "where": "PARLA_SEARCH_MIN_MATCH",
    }
