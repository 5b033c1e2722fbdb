"""The voice package's errors. The ones a user reads derive from the project's base error, so the
CLI prints them in one line with the rest; the others are how the live session tells itself a
connection failed."""

from __future__ import annotations

from parla.kernel.errors import ParlaError


class LiveSessionFailed(ParlaError):
    """The conversation cannot go on; the message says why and what to do."""


class RefusedSetup(ParlaError):
    """The settings ask the Live model for something it refuses (a field its family does not take)."""


class AudioDeviceError(ParlaError):
    """No usable audio device; the message lists the devices that exist."""


class UnreadableMessage(RuntimeError):
    """The SDK could not parse a server message (a type it does not know, broken JSON)."""


class SetupTimeout(TimeoutError):
    """The server accepted the websocket but did not complete the setup in time."""


class SpeechFailed(ParlaError):
    """The offline speech command could not say a text (missing, failed, or gave no audio)."""


class EndOfTurnModelMissing(ParlaError):
    """The end-of-turn model's file is not installed (it ships in the pipecat-ai package)."""


class WakeWordError(ParlaError):
    """The wake phrase cannot be spotted; the message says which word and what to do."""
