"""`parla doctor`, `parla service` and the daemon commands when no daemon runs."""

from __future__ import annotations

import json
import os
import stat

import pytest
from typer.testing import CliRunner

from daemon.cli import app


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


def test_doctor_without_a_key_says_how_to_get_one(parla, pulse):
    result = parla("doctor", "--json")
    assert result.exit_code == 1
    checks = {c["name"]: c for c in json.loads(result.stdout)}
    assert checks["Gemini API key"]["outcome"] == "fail" and "GEMINI_API_KEY" in checks["Gemini API key"]["fix"]
    assert checks["microphone"]["outcome"] == checks["speaker"]["outcome"] == "ok"
    assert checks["store"]["outcome"] == "ok" and "SQLite" in checks["store"]["detail"]
    assert checks["wake phrase"]["outcome"] == "ok"
    assert checks["daemon"]["outcome"] == "warn" and "parla run" in checks["daemon"]["fix"]


def test_doctor_with_a_key_checks_the_live_model_and_never_prints_the_key(parla, pulse, gemini, monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", gemini.api_key)
    monkeypatch.setenv("PARLA_GEMINI_BASE_URL", gemini.base_url)
    result = parla("doctor")
    assert result.exit_code == 0, result.stdout
    assert "Live model gemini-2.5-flash-native-audio-preview-09-2025: reachable" in result.stdout
    assert gemini.api_key not in result.stdout
    monkeypatch.setenv("PARLA_LIVE_MODEL", "gemini-no-such-model")
    result = parla("doctor")
    assert result.exit_code == 1 and "the model does not exist" in result.stdout and "PARLA_LIVE_MODEL" in result.stdout
    monkeypatch.setenv("PARLA_WAKE_PHRASE", "hey zorblax")
    assert "'zorblax' is not in the offline dictionary" in parla("doctor").stdout


def test_service_install_writes_the_unit_and_a_private_env_file(parla, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("PATH", str(tmp_path / "no-systemd"))  # as in a container without systemd
    monkeypatch.setenv("GEMINI_API_KEY", "AIza-secret-value-1")
    result = parla("service", "install")
    assert result.exit_code == 0, result.stdout
    unit = tmp_path / "xdg" / "systemd" / "user" / "parla.service"
    text = unit.read_text()
    assert "Restart=on-failure" in text and " -m daemon run" in text and "WantedBy=default.target" in text
    env = tmp_path / "config" / "parla.env"
    assert f"EnvironmentFile=-{env}" in text and "AIza" not in text
    assert stat.S_IMODE(env.stat().st_mode) == 0o600 and "GEMINI_API_KEY=AIza-secret-value-1" in env.read_text()
    assert "AIza" not in result.stdout and "systemctl --user daemon-reload" in result.stdout
    assert parla("service", "status").exit_code == 0
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
