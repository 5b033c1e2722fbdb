"""Logging: the level from settings, text or one JSON object per line (`log_format`), and no secret
ever written. Records carry an `event` field (compaction, reconnects, sessions) that the JSON lines
keep as a key. Transcripts are logged only at DEBUG.

A secret is any SecretStr setting, the password inside the database URL (libpq quotes a malformed
URL, or a part of it, in its errors), the tokens of the signed-in Supabase session (the refresh
token rotates, so the file is read again when it changes) and anything shaped like a credential:
JWTs, Google API keys, Supabase secret keys, a URL's `user:password@`, `password=`, `key=` /
`token=` query parameters, bearer tokens. Every log line (message, traceback, stack, extra fields)
and, once `redact_output` ran, everything the process writes to stdout and stderr (errors, rich
tracebacks, `--json` documents) has them replaced by ***."""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import re
import sys
import time
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import unquote

from pydantic import SecretStr

from .errors import OutputFailed
from .settings import Settings
from .terminal_text import json_text, visible

MASK = "***"

# Credentials recognised by their shape, for the ones no setting names (a token in a server's error).
_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"(?<=://)([^\s/@:]*):[^\s/@]+@"), rf"\1:{MASK}@"),
    (re.compile(r"(?i)(\bpassword\s*=\s*)('[^']*'|[^\s&]+)"), rf"\1{MASK}"),
    (re.compile(r"\beyJ[\w-]{4,}\.[\w-]{4,}\.[\w-]{4,}"), MASK),
    (re.compile(r"\bAIza[\w-]{35}"), MASK),
    (re.compile(r"\bsb_secret_[\w-]+"), MASK),
    (re.compile(r"(?i)([?&](?:key|api_?key|access_token|refresh_token|token)=)[^&\s\"']+"), rf"\1{MASK}"),
    (re.compile(r"(?i)(\bbearer\s+)[\w.~+/-]+=*"), rf"\1{MASK}"),
    (re.compile(r"(?i)(\"(?:access_token|refresh_token|provider_token|password)\"\s*:\s*\")[^\"]+"), rf"\1{MASK}"),
]

# Shorter strings are not masked: they would hide ordinary words.
_MIN_SECRET = 6


def _url_passwords(url: str) -> list[str]:
    """The password of a database URL or key=value connection string, as written and decoded; found
    even in a malformed URL (a user:password before the last @)."""
    found = [m.group(1).strip("'") for m in re.finditer(r"(?i)\bpassword\s*=\s*('[^']*'|\S+)", url)]
    if "@" in url:
        userinfo = url.split("://", 1)[-1].rsplit("@", 1)[0]
        found.append(userinfo.partition(":")[2])
    return [variant for p in found for variant in (p, unquote(p))]


def _session_tokens(path: Path) -> list[str]:
    """The access and refresh tokens in the session file of `parla login` (each value is a JSON session)."""
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    tokens = []
    for value in stored.values() if isinstance(stored, dict) else ():
        try:
            session = json.loads(value) if isinstance(value, str) else value
        except ValueError:
            continue
        if isinstance(session, dict):
            tokens += [str(session[k]) for k in ("access_token", "refresh_token", "provider_token") if session.get(k)]
    return tokens


class Redactor:
    def __init__(self) -> None:
        self._configured: list[str] = []
        self._fallbacks: list[str] = []
        self._session_file: Path | None = None
        self._session_stamp: tuple[int, int] | None = None
        self._secrets: list[str] = []

    def configure(self, secrets: list[str], session_file: Path | None = None, fallbacks: Iterable[str] = ()) -> None:
        """`fallbacks` are masked after the rest: a database URL whose password was masked already
        stays readable, and is masked whole when its password could not be found."""
        self._configured = secrets
        self._fallbacks = list(fallbacks)
        self._session_file = session_file
        self._rebuild(self._stamp())

    def _stamp(self) -> tuple[int, int] | None:
        try:
            st = self._session_file.stat() if self._session_file is not None else None
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size) if st is not None else None

    def _rebuild(self, stamp: tuple[int, int] | None) -> None:
        self._session_stamp = stamp
        tokens = _session_tokens(self._session_file) if stamp is not None and self._session_file else []
        plain = {s for s in self._configured + tokens if len(s) >= _MIN_SECRET}
        # as written, and as it appears inside a JSON string
        variants = plain | {json.dumps(s, ensure_ascii=False)[1:-1] for s in plain}
        self._secrets = sorted(variants, key=len, reverse=True)  # a secret inside a longer one goes second
        self._secrets += [f for f in self._fallbacks if len(f) >= _MIN_SECRET]

    def __call__(self, text: str) -> str:
        stamp = self._stamp()
        if stamp != self._session_stamp:
            self._rebuild(stamp)
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, MASK)
        for pattern, replacement in _PATTERNS:
            text = pattern.sub(replacement, text)
        return text


redact = Redactor()


def secrets_of(settings: Settings) -> list[str]:
    """The secret settings' values, and the password inside the database URL (the URL itself is a fallback)."""
    secrets = [
        v.get_secret_value()
        for k, v in vars(settings).items()
        if isinstance(v, SecretStr) and v.get_secret_value() and k != "supabase_db_url"
    ]
    if settings.supabase_db_url is not None:
        secrets += _url_passwords(settings.supabase_db_url.get_secret_value())
    return secrets


def _scrub(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {str(k): _scrub(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [_scrub(v) for v in value]
    if value is None or isinstance(value, bool | int | float):
        return value
    return redact(str(value))


# LogRecord's own attributes; anything else on a record came from `extra=`.
_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime", "taskName"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        entry.update({k: v for k, v in vars(record).items() if k not in _STANDARD})
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        return json_text(_scrub(entry))


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return visible(redact(super().format(record)))  # a title or transcript on a terminal


class _RedactedStream(io.TextIOBase):
    """A text stream that writes through to `stream` with every secret masked; a failed write
    (a full disk, `> /dev/full`) is one `OutputFailed` instead of a traceback."""

    def __init__(self, stream: TextIO, name: str) -> None:
        self.stream = stream
        self.name = name

    def write(self, text: str) -> int:
        with self._failing():
            self.stream.write(redact(text))
        return len(text)

    def flush(self) -> None:
        with self._failing():
            self.stream.flush()

    @contextlib.contextmanager
    def _failing(self) -> Iterator[None]:
        try:
            yield
        except BrokenPipeError:
            raise  # the reader went away (`parla chats | head`): main() ends quietly
        except OSError as e:
            # what is still buffered would fail again when Python flushes it at exit, with its own
            # complaint: it goes nowhere instead
            with contextlib.suppress(OSError, ValueError):  # a stream with no file (a test's capture)
                os.dup2(os.open(os.devnull, os.O_WRONLY), self.stream.fileno())
            raise OutputFailed(f"cannot write to {self.name}: {e.strerror or e}") from None

    def isatty(self) -> bool:
        return self.stream.isatty()

    def fileno(self) -> int:
        return self.stream.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self.stream.encoding

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return self.stream.errors


def redact_output() -> None:
    """Mask secrets in everything this process writes to stdout and stderr (the `parla` command)."""
    if not isinstance(sys.stdout, _RedactedStream):
        sys.stdout = _RedactedStream(sys.stdout, "stdout")
    if not isinstance(sys.stderr, _RedactedStream):
        sys.stderr = _RedactedStream(sys.stderr, "stderr")


class RepeatFilter(logging.Filter):
    """A warning or error identical to one written less than `window_s` ago (same logger, message
    and exception) is counted instead of written: a failure that recurs in a tight loop (accept()
    out of file descriptors, a store that stays locked) cannot fill the disk. The next one written
    after the window says how many were left out."""

    # Distinct failures remembered at most (the oldest is forgotten first).
    _REMEMBERED = 1000

    def __init__(self, window_s: float) -> None:
        super().__init__()
        self.window_s = window_s
        self._seen: dict[tuple[str, int, str, str], tuple[float, int]] = {}  # (when written, left out since)

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING or self.window_s <= 0:
            return True
        exc = record.exc_info[1] if record.exc_info else None
        key = (record.name, record.levelno, record.getMessage(), repr(exc))
        now = time.monotonic()
        written, left_out = self._seen.pop(key, (None, 0))
        if written is not None and now - written < self.window_s:
            self._seen[key] = (written, left_out + 1)
            return False
        if len(self._seen) >= self._REMEMBERED:
            del self._seen[next(iter(self._seen))]
        self._seen[key] = (now, 0)
        if left_out:
            record.msg, record.args = f"{record.getMessage()} (and {left_out} more like it not logged)", None
        return True


def configure_logging(settings: Settings) -> None:
    db_url = [settings.supabase_db_url.get_secret_value()] if settings.supabase_db_url is not None else []
    redact.configure(secrets_of(settings), settings.supabase_session_file, fallbacks=db_url)
    handler = logging.StreamHandler(sys.stderr)
    if settings.log_format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(TextFormatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    handler.addFilter(RepeatFilter(settings.log_repeat_window_s))
    logging.basicConfig(level=settings.log_level, handlers=[handler], force=True)
    logging.captureWarnings(True)  # a warning's text goes through the same formatter
