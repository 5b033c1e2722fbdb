"""Logs: JSON lines keep the event fields, and a configured secret never reaches the output."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest

from parla.daemon.logs import configure_logging
from parla.daemon.settings import Settings

pytestmark = pytest.mark.tier("fast")


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


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_tracebacks_stacks_and_extra_fields_are_redacted(capfd, tmp_path, monkeypatch, fmt):
    monkeypatch.chdir(tmp_path)
    key = "AIzaSyD3adB33f-kL9q_xVw2mN8pR4tY6uI0oPz"
    url = "postgres://postgres:S3cr3t-db-pw@db.internal:5432/postgres"
    token = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1In0.c2lnbmF0dXJlLXBhcnQ"  # a JWT no setting names
    configure_logging(Settings(gemini_api_key=key, supabase_db_url=url, log_format=fmt, log_level="INFO"))
    log = logging.getLogger("parla.test")
    try:
        raise ConnectionError(f"refused {url} with key={key}")
    except ConnectionError:
        log.exception(
            "reconnect failed", extra={"event": "x", "detail": {"url": url, "tokens": [token]}}, stack_info=True
        )
    output = capfd.readouterr().err
    assert "ConnectionError: refused postgres://postgres:***@db.internal:5432/postgres with key=***" in output
    assert "Stack (most recent call last)" in output
    for secret in (key, "S3cr3t-db-pw", token):
        assert secret not in output
    if fmt == "json":
        (entry,) = [json.loads(line) for line in output.splitlines()]
        assert entry["detail"] == {"url": "postgres://postgres:***@db.internal:5432/postgres", "tokens": ["***"]}
        assert "ConnectionError" in entry["exc"] and entry["stack"]
    logging.basicConfig(force=True)


async def test_a_failure_repeated_in_a_tight_loop_is_written_once_per_window(capfd, tmp_path, monkeypatch):
    """As asyncio reports a listening socket out of file descriptors: thousands of times a second."""
    monkeypatch.chdir(tmp_path)
    window = 0.2
    configure_logging(Settings(log_repeat_window_s=window, log_level="INFO"))
    loop = asyncio.get_running_loop()
    out_of_files = {
        "message": "socket.accept() out of system resource",
        "exception": OSError(24, "Too many open files"),
    }
    try:
        for _ in range(5000):
            loop.call_exception_handler(out_of_files)
        logging.getLogger("parla.test").error("another failure")
        for _ in range(3):
            logging.getLogger("parla.test").info("an ordinary line")
        await asyncio.sleep(window * 1.5)  # the window is over
        loop.call_exception_handler(out_of_files)
        lines = capfd.readouterr().err.splitlines()
    finally:
        logging.basicConfig(force=True)
    written = [line for line in lines if "out of system resource" in line]
    assert len(written) == 2
    assert "(and 4999 more like it not logged)" in written[1]
    assert sum("Too many open files" in line for line in lines) == 2  # one traceback each
    assert sum("another failure" in line for line in lines) == 1
    assert sum("an ordinary line" in line for line in lines) == 3
