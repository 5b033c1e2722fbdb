"""Text from chats reaches the terminal with its control characters made visible: a title or turn
holding OSC 52 (clipboard write), OSC 8 (hyperlink) or OSC 0 (window title), a C1 control or a bidi
override is shown as text by `chats`, `show`, `rm` and `export` to a terminal, and JSON carries it
as escapes that read back unchanged."""

from __future__ import annotations

import json
import logging
import os
import pty
import select
import subprocess
import sys
from pathlib import Path

import pytest

from parla.daemon.logs import configure_logging
from parla.daemon.settings import Settings

pytestmark = pytest.mark.tier("fast")

TITLE = "\x1b]0;owned\x07Trip \x9b31m\u202eplans"
CLIPBOARD = "\x1b]52;c;cm0gLXJmIH4=\x07"
LINK = "\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\"
TEXT = f"copy {CLIPBOARD} then {LINK} done"
# what must never reach a terminal: ESC, BEL and the C1 controls (CSI, OSC) in UTF-8, bidi overrides
RAW = ("\x1b", "\x07", "\x9b", "\x9d", "\u202e")


def _import(parla, tmp_path: Path) -> str:
    chat = {"id": "escapes", "title": TITLE, "turns": [{"role": "user", "text": TEXT}, {"role": "model", "text": "ok"}]}
    (tmp_path / "chat.jsonl").write_text(json.dumps(chat) + "\n")
    parla("import", str(tmp_path / "chat.jsonl"))
    (listed,) = json.loads(parla("chats", "--json").stdout)
    return listed["id"]


def _shown(output: str) -> None:
    assert not [c for c in RAW if c in output], repr(output)


def test_chats_show_rm_and_export_show_control_characters(parla, tmp_path):
    chat_id = _import(parla, tmp_path)
    chats = parla("chats").stdout
    _shown(chats)
    assert "^[]0;owned^G" in chats  # (the table may wrap the rest of the title)
    shown = parla("show", chat_id).stdout
    _shown(shown)
    assert "copy ^[]52;c;cm0gLXJmIH4=^G then ^[]8;;https://evil.example^[\\click^[]8;;^[\\ done" in shown

    # JSON escapes them all, and reads back the very text
    listed, detail, exported = (
        parla(*args).stdout
        for args in (["chats", "--json"], ["show", chat_id, "--json"], ["export", chat_id, "--format", "jsonl"])
    )
    _shown(listed + detail + exported)
    assert (
        json.loads(listed)[0]["title"] == json.loads(detail)["chat"]["title"] == json.loads(exported)["title"] == TITLE
    )
    assert json.loads(exported)["turns"][0]["parts"] == [{"text": TEXT}]

    # to a file or a pipe the Markdown is the chat itself
    assert CLIPBOARD in parla("export", chat_id).stdout

    removed = parla("rm", chat_id, "--yes")
    _shown(removed.stderr + removed.stdout)
    assert "^[]0;owned^GTrip" in removed.stderr


@pytest.mark.tier("process")
def test_export_to_a_terminal_shows_control_characters(parla, tmp_path):
    _import(parla, tmp_path)
    main, terminal = pty.openpty()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PARLA_") and "API_KEY" not in k}
    env.update({k: v for k, v in os.environ.items() if k in ("PARLA_STORE_PATH", "PARLA_CONFIG_FILE")})
    proc = subprocess.Popen(
        [sys.executable, "-m", "parla.daemon", "export", "--all"], stdout=terminal, stderr=subprocess.PIPE, env=env
    )
    os.close(terminal)
    printed = b""
    try:
        while select.select([main], [], [], 60)[0]:
            try:
                chunk = os.read(main, 65536)
            except OSError:  # the terminal closed with the process
                break
            if not chunk:
                break
            printed += chunk
    finally:
        os.close(main)
        assert proc.wait(60) == 0, proc.stderr.read() if proc.stderr else ""
    text = printed.decode()
    _shown(text)
    assert "# ^[]0;owned^GTrip <U+009B>31m<U+202E>plans" in text and "copy ^[]52;c;" in text


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_the_log_shows_control_characters(capfd, tmp_path, monkeypatch, fmt):
    """`parla run` in a terminal logs titles (and transcripts at DEBUG) there."""
    monkeypatch.chdir(tmp_path)
    configure_logging(Settings(log_format=fmt, log_level="INFO"))
    try:
        logging.getLogger("parla.test").info("switched to %s", TITLE)
        written = capfd.readouterr().err
    finally:
        logging.basicConfig(force=True)
    _shown(written)
    if fmt == "json":
        assert json.loads(written)["msg"] == f"switched to {TITLE}"
    else:
        assert "^[]0;owned^GTrip" in written
