"""Managing chats from the command line: rm, rename, export (and importing the export back),
forget; and the chat the daemon starts in (the daemon's own process: test_start_chat.py)."""

from __future__ import annotations

import asyncio
import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from parla.daemon.cli.voice import chat_for
from parla.daemon.control import send_command
from parla.daemon.memory_services import open_memory
from parla.daemon.settings import Settings
from parla.records.embedding import embed_texts
from parla.records.facts import format_fact_lines
from parla.records.pins import Pin
from parla.records.turn import MessageRange, Turn
from tests.daemon.conftest import running

pytestmark = pytest.mark.tier("fast")

DATA = Path(__file__).parents[1] / "data" / "search_chats.jsonl"


def _chats(parla) -> list[dict]:
    return json.loads(parla("chats", "--json").stdout)


def test_export_jsonl_is_read_back_unchanged(parla, tmp_path, monkeypatch):
    parla("import", str(DATA))
    parla("export", "--all", "-o", str(tmp_path / "all.jsonl"))
    exported = (tmp_path / "all.jsonl").read_text()
    assert len(exported.splitlines()) == 12
    again = json.loads(parla("import", str(tmp_path / "all.jsonl"), "--json").stdout)
    assert (again["imported"], again["unchanged"], again["turns_added"]) == (0, 12, 0)  # same store: nothing new
    monkeypatch.setenv("PARLA_STORE_PATH", str(tmp_path / "other.db"))  # a second machine
    moved = json.loads(parla("import", str(tmp_path / "all.jsonl"), "--json").stdout)
    assert (moved["imported"], moved["turns_added"]) == (12, 72)

    def content(jsonl: str) -> list[dict]:  # a store may give an imported chat its own id
        return sorted(
            ({k: v for k, v in json.loads(line).items() if k != "id"} for line in jsonl.splitlines()), key=str
        )

    assert content(parla("export", "--all", "--format", "jsonl").stdout) == content(exported)  # the same chats


def test_export_markdown_reads_as_a_conversation(parla):
    parla("import", str(DATA))
    text = parla("export", "japan-trip").stdout
    assert text.startswith("# ") and "6 turns." in text
    assert "**You** (" in text and "**Parla** (" in text and "two weeks in Japan in April" in text
    assert parla("export", ok=False).exit_code == 1  # neither chats nor --all


def test_export_to_a_dash_writes_standard_output(parla, tmp_path):
    # `-o -` wrote a file named `-` (issue 42, item 12)
    parla("import", str(DATA))
    to_dash = parla("export", "japan-trip", "-o", "-")
    assert to_dash.stdout == parla("export", "japan-trip").stdout and to_dash.stdout.startswith("# ")
    assert to_dash.stderr == "" and not (tmp_path / "-").exists()
    jsonl = parla("export", "japan-trip", "--output", "-", "--format", "jsonl").stdout
    assert json.loads(jsonl)["turns"]


def test_rename_then_find_by_the_new_title(parla):
    parla("import", str(DATA))
    renamed = parla("rename", "japan-trip", "[Japan] in April")
    assert "to [Japan] in April." in renamed.stdout  # brackets are text, not markup
    shown = json.loads(parla("show", "[japan] in april", "--json").stdout)
    assert shown["chat"]["title"] == "[Japan] in April"


def test_rm_needs_a_yes_and_deletes_everything(parla):
    parla("import", str(DATA))
    refused = parla("rm", "japan-trip", ok=False)
    assert refused.exit_code == 1 and "add --yes" in refused.stderr and len(_chats(parla)) == 12
    declined = parla("rm", "japan-trip", ok=False, input="n\n")
    assert declined.exit_code == 1 and len(_chats(parla)) == 12
    parla("rm", "japan-trip", "--yes")
    assert len(_chats(parla)) == 11
    assert json.loads(parla("stats", "--json").stdout)["total_messages"] == 66
    assert "no chat matches 'japan-trip'" in parla("show", "japan-trip", ok=False).stderr


def test_forget_a_pin_then_restore_it(parla):
    parla("import", str(DATA))
    chat = json.loads(parla("show", "japan-trip", "--json").stdout)["chat"]

    async def pin() -> None:
        async with open_memory(Settings()) as mem:
            await mem.store.add_pin(Pin(chat_id=chat["id"], content="The ryokan is booked for [April 12]"))
            await mem.store.add_pin(Pin(chat_id=chat["id"], content="The ryokan budget is 200 euros"))

    asyncio.run(pin())
    vague = parla("forget", "japan-trip", "ryokan", ok=False)
    assert vague.exit_code == 1 and "matches 2 items" in vague.stderr and "--item N" in vague.stderr
    assert "Forgot the pin: The ryokan is booked for [April 12]" in parla("forget", "japan-trip", "booked").stdout
    listed = parla("memory", "forgotten", "japan-trip").stdout
    assert "1. [pin] The ryokan is booked for [April 12]" in listed  # neither [pin] nor [April 12] is markup
    assert "Restored the pin: The ryokan is booked" in parla("memory", "restore", "japan-trip", "1").stdout
    pins = json.loads(parla("show", "japan-trip", "--json").stdout)["pins"]
    assert sorted(p["content"] for p in pins) == [
        "The ryokan budget is 200 euros",
        "The ryokan is booked for [April 12]",
    ]


def test_forgetting_a_sentence_a_pin_and_a_fact_both_hold_forgets_both(parla):
    parla("import", str(DATA))
    shown = json.loads(parla("show", "japan-trip", "--json").stdout)
    line = "The ryokan in Kyoto is booked for three nights"

    async def pin() -> None:
        async with open_memory(Settings()) as mem:
            (embedded,) = await embed_texts(mem.embedder, [format_fact_lines([line])])
            await mem.store.upsert_facts(shown["chat"]["id"], MessageRange(start=1, end=6), [line], embedded)
            await mem.store.add_pin(Pin(chat_id=shown["chat"]["id"], content=line))
            await mem.store.add_pin(Pin(chat_id=shown["chat"]["id"], content="The ryokan budget is 200 euros"))
            await mem.store.add_pin(Pin(chat_id=shown["chat"]["id"], content="The train pass costs 350 euros"))

    asyncio.run(pin())
    assert parla("forget", "japan-trip", line).stdout == f"Forgot the pin and the fact: {line}\n"
    listed = parla("memory", "forgotten", "japan-trip").stdout
    assert f"[pin] {line}" in listed and f"[fact] {line}" in listed
    # several different ones: chosen by the number the list gives
    vague = parla("forget", "japan-trip", "euros", ok=False).stderr
    assert "1. [pin] The ryokan budget is 200 euros; 2. [pin] The train pass costs 350 euros" in vague
    assert "--item N" in vague
    assert (
        parla("forget", "japan-trip", "euros", "--item", "2").stdout
        == "Forgot the pin: The train pass costs 350 euros\n"
    )


async def test_the_daemon_never_starts_in_an_empty_untitled_chat(tmp_path):
    settings = Settings(store_path=tmp_path / "parla.db", control_socket=tmp_path / "ctl.sock")
    async with open_memory(settings) as mem:
        kept = (await mem.store.create_chat(turns=[Turn.of("user", "the bread rose well")])).chat
        named = (await mem.store.create_chat(title="Ideas")).chat  # empty, but you named it: kept
        await asyncio.sleep(0.01)
        empty = (await mem.store.create_chat()).chat  # `parla new`, then nothing said
        started = await chat_for(mem, None, False)
        assert (started.chat_id, started.title, started.why) == (kept.id, "(untitled)", "talked")
        assert {c.id for c in await mem.store.list_chats()} == {kept.id, named.id}
        assert empty.id not in {c.id for c in await mem.store.list_chats()}


async def test_with_nothing_said_anywhere_the_empty_chat_is_the_one_started_in(tmp_path):
    """A daemon killed before anything was said leaves its empty chat: the next start carries on
    there instead of deleting it and making another (the chat's id stays the same)."""
    settings = Settings(store_path=tmp_path / "parla.db", control_socket=tmp_path / "ctl.sock")
    async with open_memory(settings) as mem:
        first = await chat_for(mem, None, False)
        again = await chat_for(mem, None, False)
        assert first.why == again.why == "first"
        fresh = await chat_for(mem, None, True)  # a new chat asked for: the empty one serves
        assert first.chat_id == again.chat_id == fresh.chat_id and fresh.why == "asked"
        assert [c.id for c in await mem.store.list_chats()] == [first.chat_id]


@pytest.mark.tier("audio")
async def test_the_empty_chat_a_running_daemon_is_in_is_kept(daemon_settings):
    async with running(daemon_settings) as (_daemon, mem, _chat):
        fresh = await send_command(daemon_settings.control_socket, "new")
        started = await chat_for(mem, None, False)  # the new chat is the user's last choice
        assert (started.chat_id, started.why) == (fresh["chat_id"], "chose")
        assert fresh["chat_id"] in {c.id for c in await mem.store.list_chats()}


def test_a_chat_said_in_parla_exported_and_imported_again_is_not_doubled(parla, tmp_path):
    async def said() -> str:
        async with open_memory(Settings()) as mem:
            turns = [Turn.of("user", "the bread [rose] well"), Turn.of("model", "Good, keep it warm.")]
            return (await mem.store.create_chat(turns=turns)).chat.id

    chat_id = asyncio.run(said())
    parla("export", chat_id[:8], "-o", str(tmp_path / "mine.jsonl"))
    again = json.loads(parla("import", str(tmp_path / "mine.jsonl"), "--json").stdout)
    assert (again["unchanged"], again["turns_added"], again["differs"]) == (1, 0, [])
    assert [c["turns"] for c in _chats(parla)] == [2]


def test_a_short_id_says_how_many_characters_an_id_needs(parla):
    parla("import", str(DATA))
    short = parla("rename", "9", "x", ok=False)
    assert "no chat matches '9' (an id is matched by its first 4 or more characters)" in short.stderr
    assert "4 or more" not in parla("show", "nope-nope", ok=False).stderr


@pytest.mark.tier("process")
def test_answering_no_to_rm_is_not_an_error(parla, tmp_path):
    """On a terminal (a pseudo-terminal here), `n` deletes nothing and exits 0 without an error line."""
    parla("import", str(DATA))
    main, terminal = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    with open(main, "wb", buffering=0) as keyboard:
        keyboard.write(b"n\n")
        rm = [sys.executable, "-m", "parla.daemon", "rm", "japan-trip"]
        done = subprocess.run(rm, stdin=terminal, capture_output=True, text=True, env=env, timeout=60, check=False)
    os.close(terminal)
    assert done.returncode == 0, done.stderr
    assert "Nothing deleted." in done.stdout and "error" not in done.stderr
    assert len(_chats(parla)) == 12
