"""`parla service install | uninstall | status`: Parla as a systemd user service on Linux.

The unit runs `python -m daemon run` with the interpreter Parla is installed in, restarts on
failure, and reads the key from an environment file (mode 0600) next to the config file, so the
key is in neither the unit nor the journal. macOS (launchd) is described in the README."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from daemon.settings import Settings, config_file

UNIT_NAME = "parla.service"


def unit_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "systemd" / "user"


def env_file() -> Path:
    return config_file().parent / "parla.env"


def unit_text(settings: Settings) -> str:
    return f"""[Unit]
Description=Parla voice assistant
Documentation=https://github.com/parla-assistant/parla
After=sound.target pipewire-pulse.service pulseaudio.service network-online.target

[Service]
Type=simple
ExecStart={sys.executable} -m daemon run
EnvironmentFile=-{env_file()}
Restart=on-failure
RestartSec=5
# parla stops within shutdown_timeout_s; systemd waits a little longer before killing it
TimeoutStopSec={int(settings.shutdown_timeout_s) + 5}

[Install]
WantedBy=default.target
"""


@dataclass(frozen=True)
class ServiceReport:
    unit: Path
    env: Path
    messages: list[str]


def _systemctl(*args: str) -> tuple[bool, str]:
    if shutil.which("systemctl") is None:
        return False, "systemctl is not available"
    done = subprocess.run(["systemctl", "--user", *args], capture_output=True, text=True, timeout=30, check=False)
    return done.returncode == 0, (done.stdout + done.stderr).strip()


def install(settings: Settings) -> ServiceReport:
    unit = unit_dir() / UNIT_NAME
    unit.parent.mkdir(parents=True, exist_ok=True)
    unit.write_text(unit_text(settings), encoding="utf-8")
    env = env_file()
    env.parent.mkdir(parents=True, exist_ok=True)
    messages = []
    if not env.exists():
        key = settings.gemini_api_key.get_secret_value() if settings.has_gemini_key else ""  # type: ignore[union-attr]
        line = f"GEMINI_API_KEY={key}\n" if key else "# GEMINI_API_KEY=your key from Google AI Studio\n"
        fd = os.open(env, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write("# Environment of the Parla service (mode 0600). PARLA_* settings can go here too.\n" + line)
        messages.append(f"wrote {env} (mode 0600)" + ("" if key else "; put your GEMINI_API_KEY in it"))
    else:
        os.chmod(env, 0o600)
        messages.append(f"kept {env}")
    ok, output = _systemctl("daemon-reload")
    if ok:
        ok, output = _systemctl("enable", "--now", UNIT_NAME)
    if ok:
        messages.append("enabled and started: it starts with your session from now on")
    else:
        messages.append(
            f"could not start it through systemd ({output or 'no output'}); in a desktop session run "
            f"`systemctl --user daemon-reload && systemctl --user enable --now {UNIT_NAME}`"
        )
    return ServiceReport(unit, env, messages)


def uninstall() -> ServiceReport:
    unit = unit_dir() / UNIT_NAME
    messages = []
    ok, output = _systemctl("disable", "--now", UNIT_NAME)
    messages.append("stopped and disabled" if ok else f"systemd: {output or 'nothing to stop'}")
    if unit.exists():
        unit.unlink()
        messages.append(f"removed {unit}")
        _systemctl("daemon-reload")
    else:
        messages.append("no unit was installed")
    messages.append(f"{env_file()} is kept (it holds your key); delete it if you no longer need it")
    return ServiceReport(unit, env_file(), messages)


def status() -> tuple[bool, str]:
    """(installed, what systemd says)."""
    unit = unit_dir() / UNIT_NAME
    if not unit.exists():
        return False, "not installed: `parla service install`"
    ok, output = _systemctl("status", "--no-pager", UNIT_NAME)
    return True, output or ("running" if ok else "installed")
