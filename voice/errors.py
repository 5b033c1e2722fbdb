"""The voice package's errors. Each says what went wrong and what to do, in one line for the user.

They derive from RuntimeError until the project's base error exists; then from that base, so the
CLI catches them with the rest."""

from __future__ import annotations


class LiveSessionFailed(RuntimeError):
    """The conversation cannot go on; the message says why and what to do."""


class AudioDeviceError(RuntimeError):
    """No usable audio device; the message lists the devices that exist."""


class UnreadableMessage(RuntimeError):
    """The SDK could not parse a server message (a type it does not know, broken JSON)."""


class SetupTimeout(TimeoutError):
    """The server accepted the websocket but did not complete the setup in time."""
