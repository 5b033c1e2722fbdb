"""Setting Parla up on a machine: `parla doctor` and `parla service ...`."""

from __future__ import annotations

import shutil
import subprocess

import typer
from rich.markup import escape

from daemon import service
from daemon.cli_support import command, emit_json, err, load_settings, out
from daemon.doctor import diagnose

service_app = typer.Typer(no_args_is_help=True, help="Run Parla as a background service (systemd user unit).")

_MARK = {"ok": "[green]ok[/green]  ", "warn": "[yellow]warn[/yellow]", "fail": "[red]FAIL[/red]"}


@command
async def doctor(as_json: bool = typer.Option(False, "--json", help="Print as JSON.")) -> None:
    """Check the key, the Live model, the audio devices, the store, the wake phrase and the daemon."""
    checks = await diagnose(load_settings())
    if as_json:
        emit_json([c.__dict__ for c in checks])
    else:
        for c in checks:
            out.print(f"{_MARK[c.outcome]} {escape(c.name)}: {escape(c.detail)}")
            if c.fix and c.outcome != "ok":
                out.print(f"       fix: {escape(c.fix)}")
    if any(c.outcome == "fail" for c in checks):
        raise typer.Exit(1)


@service_app.command("install")
def install() -> None:
    """Install and start the systemd user service (and an environment file for the key)."""
    report = service.install(load_settings())
    out.print(f"Installed {report.unit}")
    for message in report.messages:
        out.print(f"  {escape(message)}")
    if not report.ok:
        raise typer.Exit(1)


@service_app.command("uninstall")
def uninstall() -> None:
    """Stop the service and remove its unit."""
    for message in service.uninstall().messages:
        out.print(escape(message))


def _control(action: str, done: str) -> None:
    if not service.installed():
        err.print("parla: error: the service is not installed: `parla service install`", markup=False)
        raise typer.Exit(1)
    ok, output = service.control(action)
    if not ok:
        err.print(f"parla: error: systemd could not {action} it: {output or 'no output'}", markup=False)
        err.print("parla: `parla service logs` shows what the daemon said", markup=False)
        raise typer.Exit(1)
    out.print(done)


@service_app.command("start")
def start() -> None:
    """Start the service (also after systemd gave up restarting it)."""
    _control("start", "Started: Parla is ready.")


@service_app.command("stop")
def stop() -> None:
    """Stop the service until the next `parla service start` or login."""
    _control("stop", "Stopped.")


@service_app.command("restart")
def restart() -> None:
    """Restart the service (after changing settings or the key)."""
    _control("restart", "Restarted: Parla is ready.")


@service_app.command("status")
def status() -> None:
    """What systemd says about the service; exit 1 unless it is running."""
    running, detail = service.status()
    out.print(escape(detail))
    if not running:
        raise typer.Exit(1)


@service_app.command("logs")
def logs(
    follow: bool = typer.Option(False, "--follow", "-f", help="Keep printing new lines."),
    lines: int = typer.Option(50, "--lines", "-n", min=1, help="How many of the latest lines."),
) -> None:
    """The service's log from the journal (journalctl --user -u parla)."""
    argv = service.logs_command(follow, lines)
    if shutil.which(argv[0]) is None:
        err.print("parla: error: journalctl is not available (the service logs to the systemd journal)", markup=False)
        raise typer.Exit(1)
    try:
        code = subprocess.run(argv, check=False).returncode
    except KeyboardInterrupt:
        code = 0
    raise typer.Exit(code)
