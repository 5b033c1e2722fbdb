"""`parla doctor`, `parla service` and the daemon commands when no daemon runs."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from parla.daemon import service
from parla.daemon.cli import app
from parla.daemon.control import send_command
from parla.daemon.settings import Settings
from tests.daemon.conftest import process_env

pytestmark = pytest.mark.tier("fast")


@pytest.fixture
def parla(tmp_path, monkeypatch):
    monkeypatch.setenv("PARLA_STORE_PATH", str(tmp_path / "parla.db"))
    monkeypatch.setenv("PARLA_CONFIG_FILE", str(tmp_path / "config" / "config.toml"))
    monkeypatch.setenv("PARLA_CONTROL_SOCKET", str(tmp_path / "ctl.sock"))
    for key in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "PARLA_GEMINI_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    return lambda *args: runner.invoke(app, list(args))


@pytest.mark.tier("audio")
def test_doctor_without_a_key_says_how_to_get_one(parla, pulse):
    result = parla("doctor", "--json")
    assert result.exit_code == 1
    checks = {c["name"]: c for c in json.loads(result.stdout)}
    assert checks["Gemini API key"]["outcome"] == "fail" and "GEMINI_API_KEY" in checks["Gemini API key"]["fix"]
    assert checks["microphone"]["outcome"] == checks["speaker"]["outcome"] == "ok"
    assert checks["store"]["outcome"] == "ok" and "SQLite" in checks["store"]["detail"]
    assert checks["wake phrase"]["outcome"] == "ok"
    assert checks["daemon"]["outcome"] == "warn" and "parla run" in checks["daemon"]["fix"]


@pytest.mark.tier("audio")
def test_doctor_with_a_key_checks_the_models_and_never_prints_the_key(parla, pulse, gemini, monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", gemini.api_key)
    monkeypatch.setenv("PARLA_GEMINI_BASE_URL", gemini.base_url)
    result = parla("doctor")
    assert result.exit_code == 0, result.stdout
    assert "Live model gemini-3.8-live: available" in result.stdout
    assert "summary model gemini-3.5-flash-lite: available" in result.stdout
    assert "look-up model gemini-3.5-flash-lite: available" in result.stdout
    assert gemini.api_key not in result.stdout
    monkeypatch.setenv("PARLA_LIVE_MODEL", "gemini-no-such-model")
    checks = doctor_checks(parla)
    live = checks["Live model gemini-no-such-model"]
    assert live["outcome"] == "fail" and live["detail"] == "the Gemini API has no such model"
    assert live["fix"].startswith("set PARLA_LIVE_MODEL to a model your key can use (the default is gemini-3.8-live)")
    monkeypatch.setenv("PARLA_WAKE_PHRASE", "hey zorblax")
    assert "'zorblax' is not in the offline dictionary" in parla("doctor").stdout


def doctor_checks(parla) -> dict[str, dict[str, str]]:
    return {c["name"]: c for c in json.loads(parla("doctor", "--json").stdout)}


@pytest.mark.tier("audio")
def test_doctor_reports_a_retired_model_with_its_replacement(parla, pulse, gemini, monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", gemini.api_key)
    monkeypatch.setenv("PARLA_GEMINI_BASE_URL", gemini.base_url)
    monkeypatch.setenv("PARLA_LIVE_MODEL", "gemini-2.5-flash-native-audio-preview-09-2025")  # the old default
    monkeypatch.setenv("PARLA_SUMMARY_MODEL", "gemini-2.5-flash-lite")  # the old default, still served
    monkeypatch.setenv("PARLA_EMBEDDER", "gemini")
    monkeypatch.setenv("PARLA_EMBEDDING_MODEL", "text-embedding-004")
    checks = doctor_checks(parla)
    live = checks["Live model gemini-2.5-flash-native-audio-preview-09-2025"]
    assert live["outcome"] == "fail" and live["detail"].startswith("superseded")
    # the replacement, then what models.list offers for bidiGenerateContent (superseded ones left out)
    assert live["fix"].startswith(
        "gemini-2.5-flash-native-audio-preview-09-2025 is superseded (by -12-2025 in December 2025, then by "
        "Gemini 3.1 and 3.8 Live): set PARLA_LIVE_MODEL=gemini-3.8-live"
    )
    assert live["fix"].endswith("your key can use: gemini-3.8-live, gemini-3.8-live-extended-thinking")
    summary = checks["summary model gemini-2.5-flash-lite"]
    assert summary["outcome"] == "warn" and "deprecated" in summary["detail"]
    assert "set PARLA_SUMMARY_MODEL=gemini-3.5-flash-lite" in summary["fix"]
    embedding = checks["embedding model text-embedding-004"]
    assert embedding["outcome"] == "fail" and "set PARLA_EMBEDDING_MODEL=gemini-embedding-001" in embedding["fix"]
    assert "gemini-embedding-2" in embedding["fix"]
    lists = [r for r in gemini.requests if r.method == "GET" and r.path.split("?")[0].endswith("/models")]
    assert len(lists) == 2  # one models.list per failed check


@pytest.mark.tier("audio")
def test_doctor_refuses_a_model_that_cannot_serve_its_role(parla, pulse, gemini, monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", gemini.api_key)
    monkeypatch.setenv("PARLA_GEMINI_BASE_URL", gemini.base_url)
    monkeypatch.setenv("PARLA_LIVE_MODEL", "gemini-3.5-flash-lite")
    monkeypatch.setenv("PARLA_SUMMARY_MODEL", "gemini-3.8-live")
    monkeypatch.setenv("PARLA_LOOK_UP_MODEL", "gemini-3.8-live")
    checks = doctor_checks(parla)
    live, summary = checks["Live model gemini-3.5-flash-lite"], checks["summary model gemini-3.8-live"]
    look_up = checks["look-up model gemini-3.8-live"]
    assert look_up["outcome"] == "fail" and look_up["fix"].startswith("set PARLA_LOOK_UP_MODEL to a model")
    assert live["outcome"] == "fail" and live["detail"] == "the model does not offer bidiGenerateContent"
    assert summary["outcome"] == "fail" and summary["detail"] == "the model does not offer generateContent"
    assert "gemini-3.8-flash" in summary["fix"] and "gemini-3.8-live" not in summary["fix"].split("use:")[1]


def test_service_install_where_no_file_can_be_written_is_one_line(parla, tmp_path, monkeypatch):
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "a-file"))  # no folder can be made under it
    result = parla("service", "install")
    assert result.exit_code == 1 and result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"parla: error: cannot write {tmp_path / 'a-file' / 'systemd'}")


def test_service_install_writes_the_unit_and_a_private_env_file(parla, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("PATH", str(tmp_path / "no-systemd"))  # as in a container without systemd
    monkeypatch.setenv("GEMINI_API_KEY", "AIza-secret-value-1")
    result = parla("service", "install")
    unit = tmp_path / "xdg" / "systemd" / "user" / "parla.service"
    text = unit.read_text()
    assert "Restart=on-failure" in text and " -m parla.daemon run" in text and "WantedBy=default.target" in text
    env = tmp_path / "config" / "parla.env"
    assert f"EnvironmentFile=-{env}" in text and "AIza" not in text
    assert stat.S_IMODE(env.stat().st_mode) == 0o600 and "GEMINI_API_KEY=AIza-secret-value-1" in env.read_text()
    assert "AIza" not in result.stdout and "systemctl --user daemon-reload" in result.stdout
    assert result.exit_code == 1  # installed, but systemd could not start it: not a success
    status = parla("service", "status")
    assert status.exit_code == 1 and "systemctl is not available" in status.stdout
    for action in ("start", "stop", "restart"):
        failed = parla("service", action)
        assert failed.exit_code == 1 and f"systemd could not {action} it" in failed.stderr
    logs = parla("service", "logs")
    assert logs.exit_code == 1 and "journalctl is not available" in logs.stderr
    result = parla("service", "uninstall")
    assert not unit.exists() and "is kept (it holds your key)" in result.stdout
    status = parla("service", "status")
    assert status.exit_code == 1 and "not installed" in status.stdout
    assert os.path.exists(env)


def test_first_run_without_a_key_says_how_to_get_one(parla):
    result = parla("run")
    assert result.exit_code == 1
    assert "needs a Gemini API key" in result.stderr and "aistudio.google.com" in result.stderr
    assert "`parla chats`" in result.stderr
    assert parla("chats").exit_code == 0  # the offline commands keep working


@pytest.mark.parametrize("args", [["status"], ["say", "hello"], ["talk"], ["stop"], ["switch", "japan"]])
def test_daemon_commands_without_a_daemon_say_how_to_start_it(parla, args):
    result = parla(*args)
    assert result.exit_code == 1
    assert "the Parla daemon is not running" in result.stderr and "parla run" in result.stderr


def test_the_unit_waits_for_readiness_and_limits_restarts(parla, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    text = service.unit_text(Settings())
    unit = dict(line.split("=", 1) for line in text.splitlines() if "=" in line and not line.startswith("#"))
    assert unit["Type"] == "notify" and unit["NotifyAccess"] == "main" and unit["Restart"] == "on-failure"
    # three failed starts within two minutes and systemd stops restarting it
    assert (unit["StartLimitBurst"], unit["StartLimitIntervalSec"], unit["RestartSec"]) == ("3", "120", "5")
    assert text.index("StartLimitBurst") < text.index("[Service]")  # a [Unit] setting
    assert unit["ExecStart"] == f"{sys.executable} -m parla.daemon run"
    docs = unit.get("Documentation", "")
    assert docs.startswith("file://") and Path(docs.removeprefix("file://")).is_file()


def test_notify_sends_one_datagram_to_the_notify_socket(tmp_path, monkeypatch):
    receiver = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    receiver.bind(str(tmp_path / "notify"))
    receiver.settimeout(5)
    monkeypatch.setenv("NOTIFY_SOCKET", str(tmp_path / "notify"))
    assert service.notify("READY=1", "STATUS=listening")
    assert receiver.recv(4096) == b"READY=1\nSTATUS=listening"
    receiver.close()
    # the abstract namespace: a leading @ in $NOTIFY_SOCKET
    name = f"parla-test-{os.getpid()}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as abstract:
        abstract.bind("\0" + name)
        abstract.settimeout(5)
        monkeypatch.setenv("NOTIFY_SOCKET", "@" + name)
        assert service.notify("STOPPING=1")
        assert abstract.recv(4096) == b"STOPPING=1"
    monkeypatch.setenv("NOTIFY_SOCKET", str(tmp_path / "gone"))
    assert not service.notify("READY=1")  # nobody listens: a warning, not a crash
    monkeypatch.delenv("NOTIFY_SOCKET")
    assert not service.notify("READY=1")


@pytest.mark.tier("process")
async def test_the_daemon_says_ready_only_when_it_is(pulse, live, gemini, live_certificate, tmp_path):
    """`parla run` as systemd starts it: READY=1 arrives when the control socket answers; a second
    daemon fails with one line, never says it is running and never says ready."""
    notify_path = tmp_path / "notify"
    receiver = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    receiver.bind(str(notify_path))
    receiver.setblocking(False)
    control = tmp_path / "ctl.sock"
    env = process_env(
        pulse,
        live,
        gemini,
        live_certificate,
        tmp_path,
        NOTIFY_SOCKET=str(notify_path),
        PARLA_CONTROL_SOCKET=str(control),
    )
    loop = asyncio.get_running_loop()
    run = [sys.executable, "-m", "parla.daemon", "run"]
    proc = await asyncio.create_subprocess_exec(*run, env=env, stderr=asyncio.subprocess.PIPE)
    try:
        ready = await asyncio.wait_for(loop.sock_recv(receiver, 4096), 60)
        assert ready.startswith(b"READY=1\nSTATUS=in ")
        assert (await send_command(control, "status"))["state"] == "idle"  # ready means it answers
        second = await asyncio.create_subprocess_exec(*run, env=env, stderr=asyncio.subprocess.PIPE)
        _, said = await asyncio.wait_for(second.communicate(), 60)
        assert second.returncode == 1 and b"already running" in said
        assert b"is running in" not in said and len(said.strip().splitlines()) == 1
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(loop.sock_recv(receiver, 4096), 30) == b"STOPPING=1"
        _, said = await asyncio.wait_for(proc.communicate(), 30)
        assert proc.returncode == 0 and b"Parla is running in" in said
        token = (tmp_path / "ui-token").read_text().strip()
        assert b"Its memory is on http://127.0.0.1:" in said and token.encode() not in said
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        receiver.close()


def _on_path(home: Path, parla_bin: Path, user_path: str, installed: bool) -> subprocess.CompletedProcess[str]:
    """`parla_on_path` of scripts/python-env.sh, as run.sh calls it after installing."""
    script = f'source scripts/python-env.sh; PARLA_BIN="{parla_bin}"; parla_on_path "{user_path}"'
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", **({"PARLA_INSTALLED": "1"} if installed else {})}
    root = Path(__file__).parents[2]
    return subprocess.run(["bash", "-c", script], cwd=root, env=env, capture_output=True, text=True, check=True)


@pytest.mark.tier("process")
def test_run_sh_makes_parla_a_command_of_the_user(tmp_path):
    parla_bin = tmp_path / "venv" / "bin"
    parla_bin.mkdir(parents=True)
    (parla_bin / "parla").write_text("#!/bin/sh\necho parla 0.1.0\n")
    (parla_bin / "parla").chmod(0o755)
    home = tmp_path / "home"
    local_bin = home / ".local" / "bin"
    # ~/.local/bin on PATH (Debian's and Ubuntu's profile add it): a link there, said once
    linked = _on_path(home, parla_bin, f"{local_bin}:/usr/bin:/bin", installed=True)
    assert (local_bin / "parla").resolve() == parla_bin / "parla"
    assert f"linked {local_bin}/parla" in linked.stderr
    assert _on_path(home, parla_bin, f"{local_bin}:/usr/bin:/bin", installed=False).stderr == ""
    # not on PATH: the exact line to add, after the install only
    elsewhere = tmp_path / "other"
    hint = _on_path(elsewhere, parla_bin, "/usr/bin:/bin", installed=True).stderr
    assert f'export PATH="{parla_bin}:$PATH"' in hint and not (elsewhere / ".local").exists()
    assert _on_path(elsewhere, parla_bin, "/usr/bin:/bin", installed=False).stderr == ""
