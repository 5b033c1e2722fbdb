"""What Parla writes is its user's alone whatever the umask, and a config file or folder another user
could change is refused (whoever writes it chooses where the Gemini key goes)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.tier("fast")


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _parla_under_umask_000(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`parla ARGS` as its own process started with umask 000, on folders of the test's own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PARLA_") and "API_KEY" not in k}
    env.update(
        XDG_CONFIG_HOME=str(tmp_path / "xdg"),
        PARLA_CONFIG_FILE=str(tmp_path / "conf" / "parla" / "config.toml"),
        PARLA_STORE_PATH=str(tmp_path / "data" / "parla" / "parla.db"),
        PARLA_CONTROL_SOCKET=str(tmp_path / "run" / "ctl.sock"),
        PATH=str(tmp_path / "no-systemd"),  # as in a container without systemd
    )
    return subprocess.run(
        [sys.executable, "-m", "parla.daemon", *args],
        env=env,
        cwd=tmp_path,
        umask=0,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.tier("process")
def test_service_install_and_export_are_private_under_umask_000(tmp_path):
    installed = _parla_under_umask_000(tmp_path, "service", "install")
    assert "systemctl is not available" in installed.stdout, installed.stderr  # written, not started
    unit = tmp_path / "xdg" / "systemd" / "user" / "parla.service"
    made = [tmp_path / "xdg", unit.parent.parent, unit.parent, tmp_path / "conf", tmp_path / "conf" / "parla"]
    assert {str(f): _mode(f) for f in made} == {str(f): 0o700 for f in made}
    assert _mode(unit) == _mode(tmp_path / "conf" / "parla" / "parla.env") == 0o600

    # a unit others could append to (as an earlier install left it) is rewritten private
    unit.chmod(0o666)
    with unit.open("a") as f:
        f.write("ExecStartPre=/tmp/theirs\n")
    _parla_under_umask_000(tmp_path, "service", "install")
    assert _mode(unit) == 0o600 and "theirs" not in unit.read_text()

    exported = tmp_path / "chats.md"
    exported.write_text("")
    exported.chmod(0o644)  # an export over an earlier one
    done = _parla_under_umask_000(tmp_path, "export", "--all", "-o", str(exported))
    assert done.returncode == 0, done.stderr
    assert _mode(exported) == 0o600
    store = tmp_path / "data" / "parla"
    assert _mode(tmp_path / "data") == _mode(store) == 0o700
    assert {p.name: _mode(p) for p in store.iterdir()} == {p.name: 0o600 for p in store.iterdir()}


@pytest.mark.parametrize(
    ("folder_mode", "file_mode", "refused"),
    [
        (0o700, 0o666, "config file {file} is not used: other users can write to it (mode 666)"),
        (0o777, 0o600, "folder of the config file {folder} is not used: other users can write to it (mode 777)"),
        (0o770, None, "folder of the config file {folder} is not used: other users can write to it (mode 770)"),
        (0o1777, 0o600, None),  # a sticky folder (/tmp): others cannot replace a file of ours
        (0o755, 0o644, None),
    ],
)
def test_a_config_others_can_write_is_refused(parla, tmp_path, monkeypatch, folder_mode, file_mode, refused):
    folder = tmp_path / "conf"
    folder.mkdir()
    path = folder / "config.toml"
    if file_mode is not None:
        path.write_text('live_url = "wss://127.0.0.1:1/theirs"\n')
        path.chmod(file_mode)
    folder.chmod(folder_mode)
    monkeypatch.setenv("PARLA_CONFIG_FILE", str(path))
    result = parla("config", "show", ok=refused is None)
    if refused is not None:
        assert result.exit_code == 1
        assert result.stderr.startswith("parla: error: the " + refused.format(file=path, folder=folder))
        assert "chmod" in result.stderr and result.stderr.count("\n") == 1


@pytest.mark.parametrize(("mode", "refused"), [(0o666, True), (0o644, False)])
def test_a_dotenv_others_can_write_is_refused(parla, tmp_path, mode, refused):
    dotenv = tmp_path / ".env"  # the working folder's (the fixture's)
    dotenv.write_text("PARLA_LIVE_URL=wss://127.0.0.1:1/theirs\n")
    dotenv.chmod(mode)
    result = parla("config", "show", ok=not refused)
    if refused:
        assert result.stderr.startswith(f"parla: error: the .env file {dotenv} is not used: other users can write")
