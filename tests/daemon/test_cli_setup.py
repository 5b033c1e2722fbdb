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


def test_doctor_with_a_key_checks_the_models_and_never_prints_the_key(parla, pulse, gemini, monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", gemini.api_key)
    monkeypatch.setenv("PARLA_GEMINI_BASE_URL", gemini.base_url)
    result = parla("doctor")
    assert result.exit_code == 0, result.stdout
    assert "Live model gemini-3.8-live: available" in result.stdout
    assert "summary model gemini-3.5-flash-lite: available" in result.stdout
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


def test_doctor_refuses_a_model_that_cannot_serve_its_role(parla, pulse, gemini, monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", gemini.api_key)
    monkeypatch.setenv("PARLA_GEMINI_BASE_URL", gemini.base_url)
    monkeypatch.setenv("PARLA_LIVE_MODEL", "gemini-3.5-flash-lite")
    monkeypatch.setenv("PARLA_SUMMARY_MODEL", "gemini-3.8-live")
    checks = doctor_checks(parla)
    live, summary = checks["Live model gemini-3.5-flash-lite"], checks["summary model gemini-3.8-live"]
    assert live["outcome"] == "fail" and live["detail"] == "the model does not offer bidiGenerateContent"
    assert summary["outcome"] == "fail" and summary["detail"] == "the model does not offer generateContent"
    assert "gemini-3.8-flash" in summary["fix"] and "gemini-3.8-live" not in summary["fix"].split("use:")[1]


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
