"""The `parla` command line: the app, its global options and `main`. Each module
of this package holds one group of commands and exposes them the same way: COMMANDS (name → command
function, or a group of subcommands) and PANEL (the help section they are listed under).

Output for people goes through rich; `--json` prints one stable JSON document on stdout
(its shape in daemon/cli/json_shapes.py, documented in docs/reference/protocol.md) and progress goes to stderr. Any failure exits non-zero with one
line on stderr saying what went wrong and what to do.
"""

from __future__ import annotations

import os
import sys
from importlib.metadata import PackageNotFoundError, version

import typer

from ..errors import OutputFailed
from ..logs import redact_output
from . import chats, memory, profile, reminders, setup, supabase, ui, voice
from . import daemon as daemon_commands
from .help import HelpGroup, registered
from .support import err, options, out

# Commands that need the memory, the SDKs or the audio stack import them in their bodies: `parla
# status`, `--help` or `config path` start in a fraction of the time (bench/cli_startup.py).

app = typer.Typer(
    no_args_is_help=True,
    cls=HelpGroup,
    help="Parla: a voice assistant that remembers.",
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version() -> str:
    try:
        return version("parla")
    except PackageNotFoundError:
        return "unknown (not installed)"


def _show_version(value: bool) -> None:
    if value:
        out.print(f"parla {_version()}", markup=False)
        raise typer.Exit()


@app.callback()
def _options(
    verbose: int = typer.Option(
        0, "--verbose", "-v", count=True, help="More log output on stderr: -v info, -vv debug."
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Errors only: no progress bars, warnings or log lines."),
    _version_flag: bool = typer.Option(
        False, "--version", callback=_show_version, is_eager=True, help="Print Parla's version and exit."
    ),
) -> None:
    # The flags override PARLA_LOG_LEVEL for this command (`parla config show` says so); without
    # them nothing does, whatever an earlier command run in this process said (a test's runner).
    options.log_level = ("ERROR" if quiet else ("INFO" if verbose == 1 else "DEBUG")) if verbose or quiet else None
    options.quiet = quiet


# The help lists the groups in this order.
for _module in (daemon_commands, voice, setup, supabase, chats, ui, memory, profile, reminders):
    for _name, _target in _module.COMMANDS.items():
        if isinstance(_target, typer.Typer):
            app.add_typer(_target, name=_name, rich_help_panel=_module.PANEL)
        else:
            app.command(_name, rich_help_panel=_module.PANEL, **registered(_target))(_target)


class _Never(Exception):
    """Stands in for an exception class the installed click does not have."""


def _click_errors() -> tuple[type[Exception], type[Exception], type[Exception]]:
    # typer raises click's exceptions, or (newer typer) those of the copy of click it ships
    bases = {c.__name__: c for c in typer.BadParameter.__mro__}
    usage = bases["UsageError"]
    return usage, bases["ClickException"], getattr(sys.modules[usage.__module__], "NoArgsIsHelpError", _Never)


_USAGE_ERROR, _CLICK_EXCEPTION, _NO_ARGS_IS_HELP = _click_errors()


def main() -> None:
    """The `parla` script: click's usage errors become one line like every other failure, as does
    output that cannot be written (`parla --help > /dev/full`), and a reader that goes away (`parla
    chats | head`) ends the command quietly; no secret appears in anything printed, tracebacks
    included."""
    redact_output()
    os.umask(0o077)  # what it writes is its user's alone (daemon/private_files.py)
    try:
        code = app(prog_name="parla", standalone_mode=False)
    except _NO_ARGS_IS_HELP as e:  # `parla` or `parla memory` alone: the help is the answer
        out.print(e.format_message(), markup=False)
        code = 0
    except _USAGE_ERROR as e:
        where = f"; `{e.ctx.command_path} --help` shows the usage" if e.ctx else ""
        err.print(f"parla: error: {e.format_message().rstrip('.')}{where}", markup=False)
        code = e.exit_code
    except _CLICK_EXCEPTION as e:
        err.print(f"parla: error: {e.format_message()}", markup=False)
        code = e.exit_code
    except typer.Abort:
        err.print("parla: interrupted", markup=False)
        code = 130
    except BrokenPipeError:
        # Python would complain again when it flushes stdout at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 1
    except OutputFailed as e:  # printed outside a command's own wrapper: the help, --version, `config path`
        err.print(f"parla: error: {e}", markup=False)
        code = 1
    sys.exit(code if isinstance(code, int) else 0)
