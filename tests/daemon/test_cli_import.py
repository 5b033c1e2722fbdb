"""`parla import` of the exports people have (ChatGPT's .zip and conversations.json, Claude's,
Open WebUI's), through the CLI on a real SQLite store: the format named, the chats stored with who
said what, and an import cut short carried on by running it again."""

from __future__ import annotations

import json
import socket
import zipfile
from collections import Counter
from pathlib import Path

import pytest

pytestmark = pytest.mark.tier("fast")

DATA = Path(__file__).parents[1] / "data" / "imports"


def test_a_chatgpt_export_zip_imports_and_names_its_speakers(parla, tmp_path):
    archive = tmp_path / "chatgpt-export.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("user.json", '{"id": "user-1"}')
        z.writestr("conversations.json", (DATA / "chatgpt_conversations.json").read_text())
    result = parla("import", str(archive), "--json")
    assert f"reading conversations.json in {archive}: ChatGPT export" in result.stderr
    report = json.loads(result.stdout)
    assert (report["format"], report["imported"], report["turns_added"], report["skipped"]) == (
        "ChatGPT export",
        2,
        6,
        [],
    )
    assert {"conversation": 1, "note": "regenerated or edited branches: 2 left out"} in report["notes"]
    # ChatGPT's conversation id names the chat, and its answers are ChatGPT's, not Parla's
    shown = json.loads(parla("show", "6645f0a1-3b2c-8000-9d4e-1f2a3b4c5d6e", "--json").stdout)
    assert shown["chat"]["title"] == "Gift ideas for Mom's 60th birthday"
    assert [(t["source"], t["model_variant"]) for t in shown["full_history"][:2]] == [
        ("import", None),
        ("import", "ChatGPT (gpt-4o)"),
    ]
    markdown = parla("export", "6645f0a1-3b2c-8000-9d4e-1f2a3b4c5d6e").stdout
    assert "**ChatGPT (gpt-4o)** (" in markdown and "**Parla**" not in markdown and "**You** (" in markdown
    # an export to JSONL and back keeps who answered; the same export again adds nothing
    parla("export", "--all", "-o", str(tmp_path / "back.jsonl"))
    assert '"model_variant": "ChatGPT (gpt-4o)"' in (tmp_path / "back.jsonl").read_text()
    again = json.loads(parla("import", str(DATA / "chatgpt_conversations.json"), "--json").stdout)
    assert (again["imported"], again["unchanged"]) == (0, 2)


def test_claude_and_open_webui_exports_import(parla):
    claude = parla("import", str(DATA / "claude_conversations.json"))
    assert "Claude export" in claude.stderr and "conversation 2: an empty conversation" in claude.stderr
    assert "Imported 2 chats (6 turns in all; Claude export)" in claude.stdout
    webui = parla("import", str(DATA / "openwebui_chat_export.json"))
    assert "Imported 1 chats (4 turns in all; Open WebUI export)" in webui.stdout
    found = json.loads(parla("search", "which guitar chord changes to practise first", "--json").stdout)
    assert found["candidates"][0]["title"] == "Guitar practice plan"


def test_an_import_cut_short_carries_on_when_run_again(parla, tmp_path):
    """What was stored before the cut stays; the same import again stores the rest, once."""
    full = (DATA / "claude_conversations.json").read_text()
    source = tmp_path / "conversations.json"
    source.write_text(full[: full.index('"uuid": "5a4b3c2d')])  # as if the download or the disk stopped there
    cut = parla("import", str(source), "--json")
    assert json.loads(cut.stdout)["imported"] == 1 and "not valid JSON near byte" in cut.stderr
    source.write_text(full)
    rest = json.loads(parla("import", str(source), "--json").stdout)
    assert (rest["imported"], rest["unchanged"]) == (1, 1)
    assert len(json.loads(parla("chats", "--json").stdout)) == 2


def test_a_chat_is_found_by_its_imported_title_and_by_the_name_the_user_gives_it(parla):
    for export in ("chatgpt_conversations.json", "claude_conversations.json", "openwebui_chat_export.json"):
        parla("import", str(DATA / export))
    # no turn of the chat says "birthday": its title does
    found = json.loads(parla("search", "the birthday chat", "--json").stdout)
    assert found["decision"] == "switch"
    assert (found["candidates"][0]["title"], found["candidates"][0]["matched_kind"]) == (
        "Gift ideas for Mom's 60th birthday",
        "title",
    )
    parla("rename", "66a0b1c2", "Weekend baking plans")
    found = json.loads(parla("search", "weekend baking plans", "--json").stdout)
    assert found["decision"] == "switch" and found["candidates"][0]["title"] == "Weekend baking plans"
    assert found["candidates"][0]["matched_kind"] == "title"


def test_what_many_conversations_left_out_is_said_once_per_kind(parla, tmp_path):
    """A heavy user's export leaves something out of most conversations: the terminal gets one line
    per kind with its total, not two lines per conversation; `--json` keeps each."""
    conversations = json.loads((DATA / "chatgpt_conversations.json").read_text())
    many = []
    for n in range(30):
        for c in conversations:
            many.append({**c, "id": f"{c['id'][:-4]}{n:04d}", "conversation_id": f"{c['id'][:-4]}{n:04d}"})
    source = tmp_path / "conversations.json"
    source.write_text(json.dumps(many))
    result = parla("import", str(source), "--json")
    report = json.loads(result.stdout)
    assert report["imported"] == 60
    each = Counter(note["note"] for note in report["notes"])
    assert each["regenerated or edited branches: 2 left out"] == 30
    said = [line for line in result.stderr.splitlines() if "left out" in line]
    assert len(said) == len({note.split(":")[0] for note in each}) <= 3, said
    assert "parla: regenerated or edited branches: 60 left out, from 30 of 60 conversations" in result.stderr


def test_an_import_finishes_and_reports_when_the_daemon_does_not_answer(parla, tmp_path, monkeypatch):
    """Telling a running daemon that summaries are queued is a courtesy: a daemon that takes the
    connection and never answers (suspended, or hung) must not turn a stored import into a failure."""
    folder = tmp_path / "run"
    folder.mkdir(mode=0o700)
    monkeypatch.setenv("PARLA_CONTROL_SOCKET", str(folder / "ctl.sock"))
    monkeypatch.setenv("PARLA_IMPORT_OFFLINE_NOW_TURNS", "0")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as suspended:
        suspended.bind(str(folder / "ctl.sock"))
        suspended.listen(8)  # connections wait in the backlog: nobody accepts or answers
        result = parla("import", str(DATA / "chatgpt_conversations.json"))
    assert "Imported 2 chats" in result.stdout
    assert "are queued" in result.stderr
