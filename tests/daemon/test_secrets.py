"""No secret in any output: every command below runs as `parla` runs (main(), so stdout and stderr
pass the redaction) with real-looking secrets configured and DEBUG logs in text and JSON, on its
success and failure paths, and nothing it prints holds a key, a token or the database password."""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest

from parla.daemon.cli import main
from parla.memory.store.supabase.session import sign_in

pytestmark = pytest.mark.tier("audio")

GEMINI_KEY = "AIzaSyD3adB33f-kL9q_xVw2mN8pR4tY6uI0oPz"
ANON_KEY = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJyb2xlIjoiYW5vbiIsInJlZiI6InBhcmxhIn0.Qm9ndXNBbm9uU2lnbmF0dXJl"
SERVICE_KEY = "sb_secret_N7UND3rH1dd3nS3rv1c3K3y_x9"
DB_PASSWORD = "p@ss:w/rd#Kx81"
ACCESS_TOKEN = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1c2VyLTEiLCJyb2xlIjoiYXV0aGVudGljYXRlZCJ9.QWNjZXNzU2lnbmF0dXJlWA"
REFRESH_TOKEN = "r3fr3sh-T0ken-9qZ"
SECRETS = [GEMINI_KEY, ANON_KEY, SERVICE_KEY, DB_PASSWORD, quote(DB_PASSWORD, safe=""), ACCESS_TOKEN, REFRESH_TOKEN]

# Well-formed, and malformed in the ways libpq quotes back in its error (all on a closed local port).
DB_URLS = [
    f"postgresql://postgres.parla:{quote(DB_PASSWORD, safe='')}@127.0.0.1:1/postgres",
    f"postgres://postgres:{DB_PASSWORD}@127.0.0.1:1/postgres",
    f"postgres://admin:{DB_PASSWORD}@[::1/x",
    f"admin:{DB_PASSWORD}@localhost/x",
    f"postgres://admin:{quote(DB_PASSWORD, safe='')}@localhost/x?sslmode=bogus",
    f"host=127.0.0.1 port=1 password={DB_PASSWORD} dbname",
]


def _leaks(output: str) -> list[str]:
    return [s for s in SECRETS if s in output]


def parla(args: list[str], capfd) -> str:
    """Run the `parla` command in this process; what it wrote on stdout and stderr."""
    root = logging.getLogger()
    saved = sys.stdout, sys.stderr, sys.argv, root.handlers[:], root.level
    sys.argv = ["parla", *args]
    try:
        with pytest.raises(SystemExit):
            main()
    finally:
        sys.stdout, sys.stderr, sys.argv, root.handlers[:], level = saved
        root.setLevel(level)
    captured = capfd.readouterr()
    return captured.out + captured.err


@pytest.fixture(params=["text", "json"])
def secret_env(request, tmp_path, monkeypatch, gemini, pulse):
    session = tmp_path / "session.json"
    stored = {"access_token": ACCESS_TOKEN, "refresh_token": REFRESH_TOKEN, "expires_at": 1, "token_type": "bearer"}
    session.write_text(json.dumps({"supabase.auth.token": json.dumps(stored)}))
    monkeypatch.chdir(tmp_path)
    for name, value in {
        "PARLA_CONFIG_FILE": str(tmp_path / "none.toml"),
        "PARLA_STORE_PATH": str(tmp_path / "parla.db"),
        "PARLA_CONTROL_SOCKET": str(tmp_path / "run" / "ctl.sock"),
        "PARLA_LOG_LEVEL": "DEBUG",
        "PARLA_LOG_FORMAT": request.param,
        "GEMINI_API_KEY": GEMINI_KEY,  # not the emulator's key: the doctor's check is refused
        "PARLA_GEMINI_BASE_URL": gemini.base_url,
        "PARLA_SUMMARIZER": "offline",
        "PARLA_SUPABASE_URL": "http://127.0.0.1:1",
        "PARLA_SUPABASE_KEY": ANON_KEY,
        "PARLA_SUPABASE_SERVICE_KEY": SERVICE_KEY,
        "PARLA_SUPABASE_SESSION_FILE": str(session),
        "PARLA_SUPABASE_DB_URL": DB_URLS[0],
    }.items():
        monkeypatch.setenv(name, value)
    return tmp_path


@pytest.mark.parametrize("url", DB_URLS)
def test_db_migrate_never_prints_the_password(secret_env, capfd, monkeypatch, url):
    monkeypatch.setenv("PARLA_SUPABASE_DB_URL", url)
    output = parla(["db", "migrate"], capfd)
    assert "parla: error: cannot connect to PARLA_SUPABASE_DB_URL" in output
    assert _leaks(output) == []


def test_no_command_prints_a_secret(secret_env, capfd, monkeypatch):
    chats = secret_env / "chats.jsonl"
    line = {"id": "c1", "title": "Keys", "turns": [{"role": "user", "text": f"my key is {GEMINI_KEY}"}]}
    chats.write_text(json.dumps(line) + "\n")
    outputs = {}
    for args in (
        ["import", str(chats)],
        ["chats", "--json"],
        ["stats"],
        ["doctor"],
        ["doctor", "--json"],
        ["status"],
        ["say", "hello"],
        ["db", "check"],
        ["sync"],
        ["login", "--email", "ada@example.com", "--password", "correct horse"],
    ):
        outputs[" ".join(args)] = parla(args, capfd)
    monkeypatch.setenv("PARLA_STORE", "supabase")
    for args in (["stats"], ["chats", "--json"]):
        outputs["supabase " + " ".join(args)] = parla(args, capfd)
    assert {cmd: _leaks(output) for cmd, output in outputs.items() if _leaks(output)} == {}
    assert "Imported 1 chats" in outputs[f"import {chats}"]
    assert "the key was refused" in outputs["doctor"] and "parla: error" in outputs["db check"]


@pytest.mark.tier("postgres")
async def test_a_signed_in_session_never_shows_its_tokens(supabase, tmp_path, capfd, monkeypatch):
    supabase.shim.create_user("ada@example.com", "correct horse")
    session = tmp_path / "session.json"
    await sign_in(supabase.url, supabase.anon_key, "ada@example.com", "correct horse", session)
    stored = json.loads(next(iter(json.loads(session.read_text()).values())))
    tokens = [stored["access_token"], stored["refresh_token"], supabase.anon_key]
    for name, value in {
        "PARLA_CONFIG_FILE": str(tmp_path / "none.toml"),
        "PARLA_STORE": "supabase",
        "PARLA_STORE_PATH": str(tmp_path / "outbox.db"),
        "PARLA_SUPABASE_URL": supabase.url,
        "PARLA_SUPABASE_KEY": supabase.anon_key,
        "PARLA_SUPABASE_SESSION_FILE": str(session),
        "PARLA_LOG_LEVEL": "DEBUG",
        "PARLA_LOG_FORMAT": "json",
        "PARLA_SUMMARIZER": "offline",
    }.items():
        monkeypatch.setenv(name, value)
    output = "".join(
        [await asyncio.to_thread(parla, args, capfd) for args in (["stats", "--json"], ["db", "check"], ["chats"])]
    )
    assert '"total_chats": 0' in output and "Supabase schema version" in output
    assert [t for t in tokens if t in output] == []


@pytest.mark.tier("process")
def test_an_unexpected_traceback_shows_no_secret(tmp_path):
    """An exception nobody expected reaches the terminal as typer's traceback, through the redaction."""
    script = (
        "import logging\n"
        "from parla.daemon.cli import app, main\n"
        "from parla.daemon.cli.support import load_settings\n"
        "@app.command('boom')\n"
        "def boom() -> None:\n"
        "    key = load_settings().gemini_api_key.get_secret_value()\n"
        "    logging.getLogger('parla').warning('about to fail', extra={'key': key}, stack_info=True)\n"
        "    raise RuntimeError(f'the server said: bad key {key}')\n"
        "main()\n"
    )
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
        "PARLA_CONFIG_FILE": str(tmp_path / "none.toml"),
        "PARLA_LOG_FORMAT": "json",
        "GEMINI_API_KEY": GEMINI_KEY,
        "TERM": "dumb",
    }
    done = subprocess.run(
        [sys.executable, "-c", script, "boom"],
        check=False,
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 1 and "RuntimeError" in output and "the server said: bad key ***" in output
    assert '"key": "***"' in output and '"stack"' in output
    assert _leaks(output) == []
