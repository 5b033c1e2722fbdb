"""Reading the exports people have, from files in the formats' real shapes (written by hand from
their public descriptions, no user data): ChatGPT's (a tree of messages: only the branch shown
last, hidden and tool messages left out, what is not text kept as a marker), Claude's and Open
WebUI's, told apart by their content and read incrementally."""

from __future__ import annotations

import io
import json
import signal
import sys
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from parla.memory.errors import ImportFormatError, ImportLineError
from parla.memory.imports.importer import ImportChat
from parla.memory.imports.reading import Export

pytestmark = pytest.mark.tier("fast")

DATA = Path(__file__).parents[2] / "data" / "imports"


def read(path: Path | str) -> tuple[Export, list[ImportChat], list[ImportLineError]]:
    with Export(str(path)) as export:
        entries = list(export.chats())
    return export, [e[1] for e in entries if isinstance(e, tuple)], [e for e in entries if not isinstance(e, tuple)]


def read_text(tmp_path: Path, text: str) -> tuple[Export, list[ImportChat], list[ImportLineError]]:
    path = tmp_path / "conversations.json"
    path.write_text(text)
    return read(path)


def said(chat: ImportChat) -> list[tuple[str, str]]:
    return [(t.role, t.joined) for t in chat.turns]


@contextmanager
def within(seconds: float) -> Iterator[None]:
    """Fails the test when the block takes longer (a quadratic step ends in seconds, not minutes)."""

    def late(_signum: int, _frame: object) -> None:
        raise TimeoutError(f"not done within {seconds} s")

    previous = signal.signal(signal.SIGALRM, late)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_chatgpt_keeps_the_branch_shown_last_and_marks_what_is_not_text():
    export, chats, errors = read(DATA / "chatgpt_conversations.json")
    assert (export.format_name, export.what, errors) == ("ChatGPT export", "conversation", [])
    gift, bread = chats
    assert gift.id == "6645f0a1-3b2c-8000-9d4e-1f2a3b4c5d6e" and gift.title == "Gift ideas for Mom's 60th birthday"
    assert gift.created_at is not None and gift.created_at.isoformat() == "2024-05-06T12:53:20.123456+00:00"
    assert said(gift) == [
        ("user", "My mom turns 60 next month. She loves gardening and jazz. Any gift ideas?"),
        ("model", "How about a Japanese pruning set, or tickets to a jazz brunch?"),
        ("user", "[image]\nThis is her garden. Which tools would fit?"),
        (
            "model",
            "[code run]\n\nWith 120 euros, three tools at 40 each: secateurs, a hori-hori knife and kneeling pads.",
        ),
    ]
    # the regenerated answer and the edited question are left out, and so are the system message,
    # the custom instructions and the code's output
    assert gift.notes == ["hidden system and tool messages: 3 left out", "regenerated or edited branches: 2 left out"]
    assert [t.model_variant for t in gift.turns] == [None, "ChatGPT (gpt-4o)", None, "ChatGPT (gpt-4o)"]
    assert said(bread)[1] == ("model", "[web search]\n\nBake it 20 minutes covered at 250 degrees, then 25 uncovered.")
    assert bread.turns[0].created_at is not None and bread.turns[0].created_at.timestamp() == 1716000010.0


def test_chatgpt_without_a_current_node_follows_the_newest_branch(tmp_path):
    conversation = json.loads((DATA / "chatgpt_conversations.json").read_text())[0]
    del conversation["current_node"]
    _, (chat,), _ = read_text(tmp_path, json.dumps([conversation]))
    assert said(chat)[-1][1].endswith("kneeling pads.") and "regenerated" not in json.dumps(said(chat))


def test_a_run_of_a_hundred_thousand_messages_of_one_speaker_is_one_turn_read_in_seconds(tmp_path):
    # joined message by message, each join copied the turn so far: 300 GB copied for this one
    mapping = {"root": {"message": None, "parent": None, "children": []}}
    parent = "root"
    for n in range(100_001):
        role = "user" if n == 0 else "assistant"
        parts = [f"Step {n} of the agent's work, said in about sixty characters."]
        message = {"author": {"role": role}, "content": {"content_type": "text", "parts": parts}}
        mapping[f"m{n}"] = {"message": message, "parent": parent, "children": []}
        parent = f"m{n}"
    with within(30):
        _, (chat,), _ = read_text(tmp_path, json.dumps([{"mapping": mapping, "current_node": parent}]))
    _question, answer = said(chat)
    assert answer[1].count("\n\n") == 99_999 and answer[1].endswith(
        "Step 100000 of the agent's work, said in about sixty characters."
    )


def test_claude_export_with_blocks_thinking_files_and_an_empty_conversation():
    export, chats, errors = read(DATA / "claude_conversations.json")
    assert export.format_name == "Claude export"
    bug, plant = chats
    assert bug.title == "Fixing the python import bug" and bug.id == "0c5e7a4e-1b2d-4c3e-9f8a-7b6c5d4e3f2a"
    assert said(bug)[0][1].endswith("partially initialized module.\n[file: traceback.txt]")
    assert bug.turns[1].thinking == "Partially initialized module means a cycle."
    assert said(bug)[3][1].startswith("[tool: web_search]\nimportlib.reload re-executes")
    assert bug.notes == ["tool results: 1 left out"] and {t.model_variant for t in bug.spoken[1::2]} == {"Claude"}
    assert said(plant) == [
        ("user", "The leaves of my monstera turn yellow and droop."),
        (
            "model",
            "Yellow drooping leaves usually mean overwatering: let the top 5 cm of soil dry out between waterings.",
        ),
    ]
    (empty,) = errors
    assert str(empty) == "conversation 2: an empty conversation: no message with text"


def test_open_webui_export_keeps_the_current_branch():
    export, (chat,), errors = read(DATA / "openwebui_chat_export.json")
    assert (export.format_name, errors) == ("Open WebUI export", [])
    assert chat.title == "Guitar practice plan" and chat.notes == ["regenerated or edited branches: 1 left out"]
    assert [text for _, text in said(chat)] == [
        "I have 20 minutes a day. How should I practise guitar?",
        "Five minutes of scales, ten of chord changes, five of a song you love.",
        "Which chord changes first?",
        "G to C and C to D: they share fingers and come up in most songs.",
    ]
    assert chat.turns[1].model_variant == "Open WebUI (Llama 3.1 8B)"


def test_the_zip_chatgpt_mails_is_read_without_unpacking(tmp_path):
    archive = tmp_path / "3f1e-2026-11-20-10-11-12.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("chat.html", "<html></html>")
        z.writestr("user.json", '{"id": "user-1"}')
        z.writestr("conversations.json", (DATA / "chatgpt_conversations.json").read_text())
    export, chats, _ = read(archive)
    assert export.where == f"conversations.json in {archive}" and len(chats) == 2
    assert export.read == export.size == (DATA / "chatgpt_conversations.json").stat().st_size
    with zipfile.ZipFile(tmp_path / "photos.zip", "w") as z:
        z.writestr("a.png", b"")
        z.writestr("b.png", b"")
    with pytest.raises(ImportFormatError, match="without conversations.json"):
        Export(str(tmp_path / "photos.zip"))


def test_a_pretty_printed_object_and_jsonl_are_told_apart(tmp_path):
    one = json.loads((DATA / "openwebui_chat_export.json").read_text())[0]
    _, (chat,), _ = read_text(tmp_path, json.dumps(one, indent=2))  # one chat exported on its own
    assert chat.title == "Guitar practice plan"
    lines = tmp_path / "mixed.jsonl"
    lines.write_text(json.dumps({"turns": [{"role": "user", "text": "hi"}]}) + "\n" + json.dumps(one) + "\n")
    export, chats, _ = read(lines)
    assert export.format_name == "Parla's shape, Open WebUI export (JSONL)" and len(chats) == 2


def test_a_file_cut_short_keeps_what_came_before(tmp_path):
    text = (DATA / "claude_conversations.json").read_text()
    cut = text[: text.index('"uuid": "5a4b3c2d') + 40]
    _, chats, errors = read_text(tmp_path, cut)
    assert [c.title for c in chats] == ["Fixing the python import bug"]
    assert "conversation 3: not valid JSON near byte" in str(errors[-1])


def test_stdin_is_read_as_a_stream(monkeypatch):
    data = (DATA / "claude_conversations.json").read_bytes()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BufferedReader(io.BytesIO(data))))
    export, chats, _ = read("-")
    assert export.size is None and export.where == "stdin" and len(chats) == 2
