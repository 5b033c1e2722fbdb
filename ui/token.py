"""The inspector's secret: a random token, made once and kept in a file only its user can read.

The token is the first segment of every address the page uses, so a request without it (another
program on this machine, a page in the browser that guesses the port) is refused; it is never
written to a log (uvicorn's access log is off and the daemon names the address without it)."""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

from parla.kernel.errors import ParlaError

TOKEN_BYTES = 24


class TokenFileError(ParlaError):
    """The token file cannot be read or written."""


def load_token(path: Path) -> str:
    """The token in `path`, made (0600, folder 0700) when the file is missing or holds none; a
    file others could read is made private first."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            info = path.stat()
            if stat.S_IMODE(info.st_mode) & 0o077:
                os.chmod(path, 0o600)
            token = path.read_text(encoding="ascii").strip()
            if len(token) >= 32 and token.isascii() and all(c.isalnum() or c in "-_" for c in token):
                return token
            fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
        token = secrets.token_urlsafe(TOKEN_BYTES)
        with os.fdopen(fd, "w", encoding="ascii") as f:
            f.write(token + "\n")
        return token
    except (OSError, UnicodeDecodeError) as e:
        raise TokenFileError(
            f"cannot keep the inspector's token in {path} ({e}): set PARLA_UI_TOKEN_FILE to a file in a folder of yours"
        ) from e


def same_token(given: str | None, token: str) -> bool:
    # constant time: the comparison says nothing about how much of a guess was right
    return given is not None and secrets.compare_digest(given.encode(), token.encode())
