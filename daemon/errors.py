"""The daemon's errors: conditions a user can act on, each message saying what is wrong and what to
do. The CLI prints a ParlaError as one line; anything else is a bug and shows its traceback."""

from __future__ import annotations

from pathlib import Path

from parla.kernel.errors import ParlaError


class SettingsError(ParlaError):
    """Settings that cannot be used, said in one line that names where the bad value is."""


class ConfigError(ParlaError):
    """The settings ask for something that cannot work as they are."""


class ServiceError(ParlaError):
    """The background service's files cannot be written where systemd looks for them."""


class OutputFailed(ParlaError):
    """The command's output could not be written (a full disk, /dev/full, a closed terminal)."""


class ControlError(ParlaError):
    """The control socket between the `parla` commands and the daemon cannot be used."""


class DaemonNotRunning(ControlError):
    def __init__(self, path: Path, why: str = "") -> None:
        super().__init__(
            f"the Parla daemon is not running{f' ({why})' if why else ''}: start it with `parla run`, "
            f"or `parla service install` to run it in the background (socket {path})"
        )


class DaemonAlreadyRunning(ControlError):
    def __init__(self, path: Path) -> None:
        super().__init__(f"a Parla daemon is already running (socket {path}); `parla stop` ends it")


class UnsafeSocketFolder(ControlError):
    """The socket's folder belongs to another user or others can write to it."""


class CommandError(ControlError):
    """The daemon refused a command; the message is the daemon's."""


class DaemonBusy(CommandError):
    """The daemon had no room for one more client; nothing was done, the command can be sent again."""


class CommandFailed(ParlaError):
    """A `parla` command could not do what was asked (the daemon could not answer, the input holds nothing)."""


class LiveCheckFailed(ParlaError):
    """A step of `parla doctor --live` did not get what the Live API should send."""
