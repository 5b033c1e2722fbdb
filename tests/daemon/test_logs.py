"""Logs: JSON lines keep the event fields, and a configured secret never reaches the output."""

from __future__ import annotations

import json
import logging

from daemon.logs import configure_logging
from daemon.settings import Settings


def test_json_lines_with_events_and_no_secret(capfd, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    key = "AIzaSy-very-secret-key-123"
    configure_logging(Settings(gemini_api_key=key, log_format="json", log_level="INFO"))
    log = logging.getLogger("parla.test")
    log.info("live session lost (%s)", f"bad key {key}", extra={"event": "live_reconnect", "attempt": 2})
    log.debug("a transcript line that must not appear at INFO")
    lines = [json.loads(line) for line in capfd.readouterr().err.splitlines()]
    assert len(lines) == 1
    (entry,) = lines
    assert entry["event"] == "live_reconnect" and entry["attempt"] == 2 and entry["level"] == "INFO"
    assert key not in json.dumps(entry) and entry["msg"] == "live session lost (bad key ***)"
    logging.basicConfig(force=True)
