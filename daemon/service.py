"""`parla service install | uninstall | start | stop | restart | status | logs`: Parla as a
systemd user service on Linux.

The unit runs `python -m parla.daemon run` with the interpreter Parla is installed in (the project's
virtualenv when scripts/run.sh installed it) and reads the key from an environment file (mode
0600) next to the config file, so the key is in neither the unit nor the journal. It is
`Type=notify`: the daemon tells systemd it is ready (socket listening, devices open) with one
datagram on $NOTIFY_SOCKET, so `systemctl start` returns when Parla can be talked to, or fails.
It restarts on failure, at most a few times in a row, so a missing microphone or a bad key does
not restart it every few seconds forever. macOS (launchd) is described in docs/guides/service.md."""

from __future__ import annotations

import logging
import os
import shutil
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from .errors import ServiceError
from .private_files import private_folder, write_private
from .settings import Settings, config_file

log = logging.getLogger(__name__)

UNIT_NAME = "parla.service"
RESTART_DELAY_S = 5
# At most START_LIMIT_BURST starts within START_LIMIT_INTERVAL_S, then systemd gives up
# ("start request repeated too quickly") until `parla service start` or `systemctl --user reset-failed`.
START_LIMIT_BURST = 3
START_LIMIT_INTERVAL_S = 120
# Opening the store, the audio devices and the wake-phrase model; a slow first start still fits.
START_TIMEOUT_S = 90


def unit_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "systemd" / "user"


def env_file() -> Path:
    return config_file().parent / "parla.env"


def _documentation() -> str:
    """The service's guide in the checkout this Parla was installed from, when it is on disk."""
    guide = Path(__file__).resolve().parents[1] / "docs" / "guides" / "service.md"
    return f"Documentation=file://{guide}\n" if guide.is_file() else ""


def unit_text(settings: Settings) -> str:
    return f"""[Unit]
Description=Parla voice assistant
{_documentation()}After=sound.target pipewire-pulse.service pulseaudio.service network-online.target
StartLimitIntervalSec={START_LIMIT_INTERVAL_S}
StartLimitBurst={START_LIMIT_BURST}

[Service]
Type=notify
NotifyAccess=main
ExecStart={sys.executable} -m parla.daemon run
EnvironmentFile=-{env_file()}
Restart=on-failure
RestartSec={RESTART_DELAY_S}
TimeoutStartSec={START_TIMEOUT_S}
# parla stops within shutdown_timeout_s; systemd waits a little longer before killing it
TimeoutStopSec={int(settings.shutdown_timeout_s) + 5}

[Install]
WantedBy=default.target
"""


def notify(*fields: str) -> bool:
    """Send sd_notify fields (`READY=1`, `STATUS=...`, `STOPPING=1`) to the service manager, as
    sd_notify(3) does: one datagram on the AF_UNIX socket $NOTIFY_SOCKET names, a leading `@`
    meaning the abstract namespace. False when not run by systemd or when the send fails (the
    daemon works on; systemd then reports the start as timed out)."""
    address = os.environ.get("NOTIFY_SOCKET")
    if not address:
        return False
    if address.startswith("@"):
        address = "\0" + address[1:]
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            sock.connect(address)
            sock.sendall("\n".join(fields).encode())
    except OSError as e:
        log.warning("could not notify systemd on %s: %s", address, e, extra={"event": "sd_notify_failed"})
        return False
    return True


@dataclass(frozen=True)
class ServiceReport:
    unit: Path
    env: Path
    messages: list[str]
    ok: bool = True


def _systemctl(*args: str) -> tuple[bool, str]:
    if shutil.which("systemctl") is None:
        return False, "systemctl is not available"
    try:
        done = subprocess.run(["systemctl", "--user", *args], capture_output=True, text=True, timeout=120, check=False)
    except subprocess.TimeoutExpired:
        return False, f"systemctl --user {' '.join(args)} did not answer within 120 s"
    return done.returncode == 0, (done.stdout + done.stderr).strip()


def _write_files(settings: Settings, unit: Path, env: Path) -> list[str]:
    private_folder(unit.parent)
    write_private(unit, unit_text(settings))  # a unit others could append to would run their commands
    private_folder(env.parent)
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
    return messages


def install(settings: Settings) -> ServiceReport:
    unit, env = unit_dir() / UNIT_NAME, env_file()
    try:
        messages = _write_files(settings, unit, env)
    except OSError as e:  # a folder that cannot be made or written: the user's to fix
        where = e.filename or unit.parent
        raise ServiceError(
            f"cannot write {where} ({e.strerror or e}); check XDG_CONFIG_HOME and PARLA_CONFIG_FILE"
        ) from e
    ok, output = _systemctl("daemon-reload")
    if ok:
        ok, output = _systemctl("enable", "--now", UNIT_NAME)
    if ok:
        messages.append("enabled and started: it starts with your session from now on")
    else:
        messages.append(
            f"could not start it through systemd ({output or 'no output'}); in a desktop session run "
            f"`systemctl --user daemon-reload && systemctl --user enable --now {UNIT_NAME}`, "
            "and `parla service logs` shows why it stopped"
        )
    return ServiceReport(unit, env, messages, ok)


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


def installed() -> bool:
    return (unit_dir() / UNIT_NAME).exists()


def control(action: str) -> tuple[bool, str]:
    """`start`, `stop` or `restart` the unit; a start also clears an earlier start-limit stop."""
    if action in ("start", "restart"):
        _systemctl("reset-failed", UNIT_NAME)
    return _systemctl(action, UNIT_NAME)


def status() -> tuple[bool, str]:
    """(running, what systemd says)."""
    if not installed():
        return False, "not installed: `parla service install`"
    ok, output = _systemctl("status", "--no-pager", UNIT_NAME)
    return ok, output or ("running" if ok else "not running")


def logs_command(follow: bool, lines: int) -> list[str]:
    return ["journalctl", "--user", "-u", UNIT_NAME, "--no-pager", "-n", str(lines), *(["-f"] if follow else [])]
