"""Setting Parla up on a machine: `parla doctor` and `parla service install | uninstall | status`."""

from __future__ import annotations

import typer
from rich.markup import escape

from daemon import service
from daemon.cli_support import command, emit_json, load_settings, out
from daemon.doctor import diagnose

service_app = typer.Typer(no_args_is_help=True, help="Run Parla as a background service (systemd user unit).")

_MARK = {"ok": "[green]ok[/green]  ", "warn": "[yellow]warn[/yellow]", "fail": "[red]FAIL[/red]"}


@command
async def doctor(as_json: bool = typer.Option(False, "--json", help="Print as JSON.")) -> None:
    """Check the key, the Gemini models in use, the audio devices, the store, the wake phrase and the daemon."""
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


@service_app.command("uninstall")
def uninstall() -> None:
    """Stop the service and remove its unit."""
    for message in service.uninstall().messages:
        out.print(escape(message))


@service_app.command("status")
def status() -> None:
    """Whether the service is installed, and what systemd says about it."""
    installed, detail = service.status()
    out.print(escape(detail))
    if not installed:
        raise typer.Exit(1)
