"""ALSA's own messages, such as a playback that ran dry ("underrun occurred"), as lines of Parla's log.

ALSA's library prints its errors straight to the process's stderr ("ALSA lib pcm.c:8570:
(snd_pcm_recover) underrun occurred"), past Parla's log and its counting of repeated warnings: on a
busy machine one daemon's journal had 69 of them in 15 minutes. `route_alsa_messages` sets ALSA's
error handler (`snd_lib_error_set_handler`) so each message is a warning of this module's logger
instead; the log's repeat filter (daemon/logs.py, `PARLA_LOG_REPEAT_WINDOW_S`) then writes the first
and counts the rest ("and 68 more like it not logged").

It is set once sounddevice has loaded: PortAudio lists the devices when it loads, and the failed
probes of devices that do not exist reach a handler that is set (ALSA's default one keeps them to
itself). An underrun is a short gap in what the speaker plays (the audio callback came late: the
machine was busy); the echo canceller takes it into account (voice/audio/echo.py).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import re

log = logging.getLogger(__name__)

# void handler(const char *file, int line, const char *function, int err, const char *fmt, ...): the
# first of the variable arguments is the sixth argument, which Linux's calling conventions (x86-64,
# arm64) pass where a sixth fixed one goes; it is read only when `fmt` says it is a string.
_Handler = ctypes.CFUNCTYPE(
    None, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p
)
_CONVERSION = re.compile(r"%[-+ #0-9.]*[a-zA-Z%]")
# What the two messages that recur mean, said after them.
_MEANINGS = {
    "underrun occurred": "a gap in what the speaker played: its audio came late (a busy machine)",
    "overrun occurred": "a gap in what the microphone heard: its audio was taken late (a busy machine)",
}

# kept for the process's life: ALSA holds a pointer to it
_handler: object | None = None


def message(fmt: bytes | None, first: int | None) -> str:
    """The message `fmt` makes with its first argument, when that is its only one and a string
    ("%s occurred" and "underrun": "underrun occurred"); else `fmt` as it is."""
    text = (fmt or b"").decode(errors="replace")
    conversions = _CONVERSION.findall(text)
    if conversions == ["%s"] and first:
        return text.replace("%s", ctypes.string_at(first).decode(errors="replace"))
    return text


def _on_message(
    file: bytes | None, line: int, function: bytes | None, err: int, fmt: bytes | None, first: int | None
) -> None:
    text = message(fmt, first)
    why = f": {os.strerror(abs(err))}" if err else ""
    where = (function or b"").decode(errors="replace")
    meaning = f": {_MEANINGS[text]}" if text in _MEANINGS else ""
    log.warning("ALSA: %s%s (%s)%s", text, why, where, meaning, extra={"event": "alsa"})


def route_alsa_messages() -> bool:
    """ALSA's messages to this logger from now on (once per process); False where there is no ALSA."""
    global _handler
    if _handler is not None:
        return True
    name = ctypes.util.find_library("asound")
    if name is None:  # not Linux, or no ALSA: nothing prints there
        return False
    try:
        library = ctypes.CDLL(name)
    except OSError:
        return False
    handler = _Handler(_on_message)
    library.snd_lib_error_set_handler.argtypes = [_Handler]
    library.snd_lib_error_set_handler(handler)
    _handler = handler
    return True
