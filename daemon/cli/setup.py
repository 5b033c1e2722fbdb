"""Setting Parla up on a machine: `parla doctor`, `parla config ...` and `parla service ...`."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape

from .. import service, settings_sources
from ..settings import Settings, config_file
from .support import SETUP, command, emit_json, err, fail, group, load_settings, options, out

_MARK = {"ok": "[green]ok[/green]  ", "warn": "[yellow]warn[/yellow]", "fail": "[red]FAIL[/red]"}


@command
async def doctor(
    as_json: bool = typer.Option(False, "--json", help="Print as JSON."),
    live: bool = typer.Option(False, "--live", help="Open a short real Live session and check it step by step."),
    speech: Path | None = typer.Option(None, help="With --live: a 16 kHz mono 16-bit WAV of a short question."),
    trace: Path | None = typer.Option(None, help="With --live: where the trace goes (default: in this folder)."),
) -> None:
    """Check the key, the Gemini models in use, the audio devices, the store, the wake phrase and the
    daemon; with --live, a real Live session (setup, a spoken turn, a tool call, an interruption, a
    resumption), traced to a file to send when something differs."""
    if live:
        await _live_check(as_json, speech, trace)
        return
    from ..doctor import diagnose

    checks = await diagnose(load_settings())
    if as_json:
        emit_json([c.__dict__ for c in checks], "doctor")
    else:
        for c in checks:
            out.print(f"{_MARK[c.outcome]} {escape(c.name)}: {escape(c.detail)}")
            if c.fix and c.outcome != "ok":
                out.print(f"       fix: {escape(c.fix)}")
    if any(c.outcome == "fail" for c in checks):
        raise typer.Exit(1)


async def _live_check(as_json: bool, speech: Path | None, trace: Path | None) -> None:
    from ..live_check import default_trace_path, live_check, read_speech
    from ..memory_services import gemini_client

    if speech is None:
        raise fail("--live needs --speech: a WAV file (16 kHz, mono, 16-bit) of a short spoken question")
    settings = load_settings()
    pcm = read_speech(speech)
    path = trace or default_trace_path()
    with path.open("w", encoding="utf-8") as out_file:
        steps = await live_check(settings, gemini_client(settings), pcm, out_file)
    if as_json:
        emit_json({"steps": [s.__dict__ for s in steps], "trace": str(path)}, "doctor --live")
    else:
        for s in steps:
            out.print(f"{_MARK['ok' if s.ok else 'fail']} {escape(s.name)}: {escape(s.detail)}")
        out.print(f"trace: {escape(str(path))} (attach it to an issue when a step failed or differs)")
    if len(steps) < 5 or not all(s.ok for s in steps):
        raise typer.Exit(1)


@command
def config_show(
    only_set: bool = typer.Option(
        False, "--set", help="Only the settings given a value (config file, .env, environment, -v/-q)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print as JSON."),
) -> None:
    """Every setting's value in effect (secrets masked) and where it came from: the default, the
    config file, .env or the environment; with --set, only those not left at their default."""
    settings = load_settings()
    origins = settings_sources.sources(settings_sources.overrides(options.log_level))
    rows: dict[str, dict[str, Any]] = {}
    said: dict[str, str] = {}  # the `# where from` of each text line
    for name in Settings.model_fields:
        value, origin = settings_sources.shown(getattr(settings, name)), origins[name]
        if only_set and origin.kind == "default":
            continue
        rows[name] = {"value": value, "source": origin.kind} | ({"where": origin.where} if origin.where else {})
        said[name] = str(origin)
        # left unset: the value another setting gives it, or what its absence means
        if value is None and (default := settings_sources.unset_default(settings, name)):
            rows[name] |= {"value": default[0], "where": default[1]}
            said[name] = f"{origin}: {default[1]}"
    if as_json:
        emit_json(rows, "config show")
        return
    if only_set and not rows:
        out.print("Every setting has its default value (`parla config show` lists them).", markup=False)
    # one `name = value  # where from` line per setting: as the config file spells it, ready to copy
    for name, row in rows.items():
        out.print(_config_line(name, row["value"], said[name]), markup=False)
    if not only_set:
        given = sum(origin.kind != "default" for origin in origins.values())
        count = "No setting is" if not given else "1 setting is" if given == 1 else f"{given} settings are"
        out.print(f"{count} set; `parla config show --set` lists only them.", markup=False)
    out.print(f"config file: {escape(str(config_file()))}" + ("" if config_file().is_file() else " (not there)"))


def _config_line(name: str, value: Any, where: str) -> str:
    if value is None:
        return f"{name} = (not set)  # {where}"
    if isinstance(value, list) and any(isinstance(item, dict) for item in value):
        # tables (the MCP servers): one a line, as TOML writes a long array; its comment first
        tables = "".join(f"\n    {settings_sources.toml_value(item)}," for item in value)
        return f"{name} = [  # {where}{tables}\n]"
    return f"{name} = {settings_sources.toml_value(value)}  # {where}"


def config_path() -> None:
    """The config file Parla reads (PARLA_CONFIG_FILE, or config.toml in the user config folder)."""
    out.print(str(config_file()), markup=False)
    if not config_file().is_file():
        err.print("parla: the file does not exist yet; settings written there as `name = value` apply", markup=False)


@command
def install() -> None:
    """Install and start the systemd user service (and an environment file for the key)."""
    report = service.install(load_settings())
    out.print(f"Installed {report.unit}", markup=False)
    for message in report.messages:
        out.print(f"  {escape(message)}")
    if not report.ok:
        raise typer.Exit(1)


def uninstall() -> None:
    """Stop the service and remove its unit."""
    for message in service.uninstall().messages:
        out.print(escape(message))


def _control(action: str, done: str) -> None:
    if not service.installed():
        raise fail("the service is not installed: `parla service install`")
    ok, output = service.control(action)
    if not ok:
        raise fail(f"systemd could not {action} it ({output or 'no output'}); `parla service logs` shows why")
    out.print(done, markup=False)


def start() -> None:
    """Start the service (also after systemd gave up restarting it)."""
    _control("start", "Started: Parla is ready.")


def stop() -> None:
    """Stop the service until the next `parla service start` or login."""
    _control("stop", "Stopped.")


def restart() -> None:
    """Restart the service (after changing settings or the key)."""
    _control("restart", "Restarted: Parla is ready.")


def status() -> None:
    """What systemd says about the service; exit 1 unless it is running."""
    running, detail = service.status()
    out.print(escape(detail))
    if not running:
        raise typer.Exit(1)


def logs(
    follow: bool = typer.Option(False, "--follow", "-f", help="Keep printing new lines."),
    lines: int = typer.Option(50, "--lines", "-n", min=1, help="How many of the latest lines."),
) -> None:
    """The service's log from the journal (journalctl --user -u parla)."""
    argv = service.logs_command(follow, lines)
    if shutil.which(argv[0]) is None:
        raise fail("journalctl is not available (the service logs to the systemd journal)")
    try:
        code = subprocess.run(argv, check=False).returncode
    except KeyboardInterrupt:
        code = 0
    raise typer.Exit(code)


@command
def devices(as_json: bool = typer.Option(False, "--json", help="Print as JSON.")) -> None:
    """The audio devices Parla can use, and which ones the settings pick (PARLA_INPUT_DEVICE,
    PARLA_OUTPUT_DEVICE; none set: the system default)."""
    from parla.voice.audio.devices import AudioDeviceError, list_devices, resolve_device

    settings = load_settings()
    found = list_devices()
    chosen: dict[str, int | str | None] = {}
    for kind, spec in (("input", settings.input_device), ("output", settings.output_device)):
        try:
            index = resolve_device(spec, kind)
            chosen[kind] = index if index is not None else _default_device(kind)
        except AudioDeviceError as e:
            chosen[kind] = None
            err.print(f"parla: warning: {e}", markup=False)
    rows = [
        {
            "index": d.index,
            "name": d.name,
            "inputs": d.inputs,
            "outputs": d.outputs,
            "default_rate": d.default_rate,
            "used_for": [kind for kind in ("input", "output") if chosen[kind] == d.index],
        }
        for d in found
    ]
    if as_json:
        emit_json(rows, "devices")
        return
    if not rows:
        raise fail("no audio devices exist (is a sound server running?)")
    from rich.table import Table

    table = Table("index", "name", "in", "out", "rate", "Parla uses it for")
    for row in rows:
        table.add_row(
            str(row["index"]),
            escape(row["name"]),
            str(row["inputs"]),
            str(row["outputs"]),
            f"{row['default_rate']:.0f}",
            ", ".join(row["used_for"]),
        )
    out.print(table)


def _default_device(kind: str) -> int | None:
    import sounddevice

    index = sounddevice.default.device[0 if kind == "input" else 1]
    return int(index) if index is not None and index >= 0 else None


COMMANDS = {
    "devices": devices,
    "doctor": doctor,
    "config": group("The settings in effect and where they come from.", {"show": config_show, "path": config_path}),
    "service": group(
        "Run Parla as a background service (systemd user unit).",
        {
            "install": install,
            "uninstall": uninstall,
            "start": start,
            "stop": stop,
            "restart": restart,
            "status": status,
            "logs": logs,
        },
    ),
}
PANEL = SETUP
