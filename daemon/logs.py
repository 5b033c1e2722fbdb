"""Logging: the level from settings, text or one JSON object per line (`log_format`), and no secret
ever written. Records carry an `event` field (compaction, reconnects, sessions: seed 004 §8.3)
that the JSON lines keep as a key. Transcripts are logged only at DEBUG."""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime

from pydantic import SecretStr

from daemon.settings import Settings

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
        return json.dumps(entry, ensure_ascii=False, default=str)


class RedactSecrets(logging.Filter):
    """Replaces every configured secret (API keys, database URLs) by *** in what is logged."""

    def __init__(self, secrets: list[str]) -> None:
        super().__init__()
        self.secrets = [s for s in secrets if len(s) >= 6]

    def filter(self, record: logging.LogRecord) -> bool:
        if self.secrets:
            message = record.getMessage()
            if any(s in message for s in self.secrets):
                for secret in self.secrets:
                    message = message.replace(secret, "***")
                record.msg, record.args = message, None
        return True


def secrets_of(settings: Settings) -> list[str]:
    return [v.get_secret_value() for v in vars(settings).values() if isinstance(v, SecretStr) and v.get_secret_value()]


def configure_logging(settings: Settings) -> None:
    handler = logging.StreamHandler(sys.stderr)
    if settings.log_format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    handler.addFilter(RedactSecrets(secrets_of(settings)))
    logging.basicConfig(level=settings.log_level, handlers=[handler], force=True)
