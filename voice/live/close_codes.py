"""What a failed Live connection means for the conversation: the close code, the server's reason in
words, and whether reconnecting can help.

- 1007 (the server refused what we sent): `refused`; the session must start fresh, without what
  the handle or the seed carried.
- 1008 (policy: key, model, permission), a refused handshake (HTTP 400/401/403/404) or a TLS
  certificate that is not trusted: `fatal`; retrying cannot help, and the advice says what to fix.
- Everything else (1006/1011, other drops, HTTP 429 for quota, a setup timeout, an unreadable
  message, any unexpected error): `transient`; reconnect with backoff.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from typing import Literal

from google.genai import errors
from websockets.exceptions import ConnectionClosed, InvalidStatus

from parla.kernel.models import not_found_advice

from ..errors import SetupTimeout, UnreadableMessage

FailureKind = Literal["transient", "refused", "fatal"]

# Failures a connection is expected to meet; any other exception is logged with its traceback
# (a bug, or a server change) and handled the same way.
_EXPECTED = (errors.APIError, ConnectionClosed, InvalidStatus, OSError, TimeoutError, UnreadableMessage)

# The close code the server sends when it refuses what the client sent (a setup field, a message).
REFUSED = 1007
# The close code for a policy failure: the key, the model or a permission.
POLICY = 1008


@dataclass(frozen=True)
class ConnectionFailure:
    """One connection's failure, classified."""

    kind: FailureKind
    code: int | None  # the websocket close code (1006 for a drop with no close frame), if any
    reason: str  # what happened, in the server's words where it gave some
    advice: str | None = None  # for a fatal failure: the message for the user, with what to fix
    expected: bool = True  # False: an exception no connection should raise (a bug, a server change)


def close_code(exc: BaseException) -> int | None:
    """The close code of a failed connection; None when it did not end in a close."""
    if isinstance(exc, errors.APIError):
        return exc.code
    if isinstance(exc, ConnectionClosed):
        return exc.rcvd.code if exc.rcvd else 1006
    return None


def failure_reason(exc: BaseException) -> str:
    """The failure in words, with the server's own reason where it gave one."""
    if isinstance(exc, errors.APIError):
        detail = exc.details if isinstance(exc.details, str) else exc.message
        return f"close {exc.code}: {detail or 'no reason given'}"
    if isinstance(exc, ConnectionClosed):
        frame = exc.rcvd
        return f"close {frame.code}: {frame.reason or 'no reason given'}" if frame else "connection lost (1006)"
    if isinstance(exc, InvalidStatus):
        status = exc.response.status_code
        quota = " (quota or rate limit exhausted; see the key's limits in Google AI Studio)" if status == 429 else ""
        return f"the server refused the connection with HTTP {status}{quota}"
    if isinstance(exc, (UnreadableMessage, SetupTimeout)):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


def _fatal_advice(exc: BaseException, code: int | None, reason: str) -> str | None:
    """Why retrying cannot help, or None when it can."""
    if code == POLICY:
        return not_found_advice("live", f"the Live API refused the session ({reason})") or (
            f"the Live API refused the session ({reason}); check the API key, the model name "
            "(PARLA_LIVE_MODEL) and that the key may use the Live API"
        )
    if isinstance(exc, InvalidStatus) and exc.response.status_code in (400, 401, 403, 404):
        return f"{reason}; check the API key and PARLA_LIVE_URL"
    if isinstance(exc, ssl.SSLCertVerificationError):
        return f"the Live API's TLS certificate was not trusted ({exc.verify_message}); check PARLA_LIVE_URL"
    return None


def classify(exc: BaseException) -> ConnectionFailure:
    """What one connection's failure means for the conversation."""
    code = close_code(exc)
    reason = failure_reason(exc)
    expected = isinstance(exc, _EXPECTED)
    advice = _fatal_advice(exc, code, reason)
    if advice is not None:
        return ConnectionFailure("fatal", code, reason, advice, expected)
    return ConnectionFailure("refused" if code == REFUSED else "transient", code, reason, None, expected)
