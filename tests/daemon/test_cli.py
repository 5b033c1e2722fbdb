"""The `parla` commands, run in-process through typer and once through the installed script."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bench.corpus import write_jsonl
from parla.daemon.cli import app
from parla.daemon.memory_services import open_memory
from parla.daemon.settings import Settings
from parla.memory.forgetting import memory_items, set_forgotten
from parla.memory.store.sqlite.store import SQLiteChatStore
from parla.records.pins import Pin
from parla.records.turn import Turn, WebSource

pytestmark = pytest.mark.tier("fast")

DATA = Path(__file__).parent.parent / "data"


def test_import_120_chats_then_search_offline(parla, tmp_path):
    # 120 chats, not 300 as before: what it checks holds at any size past a few dozen (the vector
    # file reranks up to 300 chats in any case), and each chat cost about 70 ms of the suite
    source = write_jsonl(tmp_path / "chats.jsonl", 120, turns=(4, 40))
    with source.open("a") as f:
        f.write("{broken\n")
        f.write('{"turns": [{"role": "narrator", "text": "x"}]}\n')
    # summarised here: a big import would leave them to the daemon's queue
    report = json.loads(parla("import", str(source), "--offline", "--json").stdout)
    assert report["imported"] == 120 and report["unchanged"] == 0
    assert report["skipped"] == [
        {"line": 121, "reason": "not valid JSON (Expecting property name enclosed in double quotes at column 2)"},
        {
            "line": 122,
            "reason": "turns.0.role: Input should be 'user', 'model', 'assistant', 'system', 'developer', 'tool' or 'function'",
        },
    ]
    again = json.loads(parla("import", str(source), "--json").stdout)
    assert (again["imported"], again["unchanged"], again["turns_added"]) == (0, 120, 0)
    stats = json.loads(parla("stats", "--json").stdout)
    assert stats["total_chats"] == 120 and stats["embedder"].startswith("wordllama")
    assert stats["total_summaries"] > 120 and stats["embedded_texts"] > 240
    size = stats["store_size"]  # the import left the vector index built beside the store
    assert size["index_files"] > 0 and size["turns"] == stats["total_messages"]
    assert size["bytes_per_1000_turns"] == round((size["file"] + size["index_files"]) * 1000 / size["turns"])
    assert 0 < size["vectors"] < size["parts"]["windows"] + size["parts"]["summaries_and_facts"]
    shown = {
        line.split("│")[1].strip(): line.split("│")[2].strip()
        for line in parla("stats").stdout.splitlines()
        if line.count("│") == 3
    }
    assert shown["store size: turns"] == str(stats["total_messages"])  # a count; the parts' bytes in MB
    assert all(shown[f"store size: parts: {part}"].endswith(" MB") for part in ("turns", "turn words", "windows"))
    chats = json.loads(parla("chats", "--json", "--limit", "500").stdout)
    assert len(chats) == 120 and all(c["title"] for c in chats)
    result = json.loads(parla("search", "the chat about my piano practice", "--json").stdout)
    assert result["decision"] != "none" and result["candidates"]
    assert "piano" in result["candidates"][0]["matched_text"].lower()


def test_show_search_regenerate_reembed(parla):
    parla("import", str(DATA / "search_chats.jsonl"))
    result = json.loads(parla("search", "the bread with the starter", "--json").stdout)
    assert result["decision"] == "switch" and "leads the next" in result["reason"]
    top = result["candidates"][0]
    assert set(top) == {
        "chat_id",
        "title",
        "score",
        "match",
        "similarity",
        "words",
        "date",
        "recency",
        "last_activity_at",
        "matched_kind",
        "matched_range",
        "matched_text",
        "matched_words",
    }
    assert "starter" in top["matched_words"]
    shown_plain = parla("search", "the bread with the starter").stdout
    assert "Why: the top chat matches" in shown_plain and "words: " in shown_plain
    shown = json.loads(parla("show", top["chat_id"][:8], "--json").stdout)
    assert "sourdough" in shown["full_history"][0]["parts"][0]["text"]
    assert set(shown) == {
        "chat",
        "full_history",
        "assistant_history",
        "summaries",
        "facts",
        "pins",
        "tokens",
        "dropped",
        "context",
    }
    assert shown["tokens"]["context"] <= shown["tokens"]["budget"]
    text = parla("show", top["chat_id"]).stdout
    assert "full history: 6 turns" in text
    bad = parla("memory", "regenerate", top["chat_id"], "--range", "1-10", ok=False)
    assert bad.exit_code == 1 and "no complete chunk" in bad.stderr
    parla("memory", "reembed")
    assert (
        json.loads(parla("search", "the bread with the starter", "--json").stdout)["candidates"][0]["chat_id"]
        == top["chat_id"]
    )


def test_auto_pins_say_where_they_come_from_and_are_forgotten_like_any_pin(parla, tmp_path):
    turns = [
        {"role": "user" if i % 2 == 0 else "model", "text": f"Small talk number {i}, nothing to keep."}
        for i in range(24)
    ]
    turns[4]["text"] = "I'm allergic to penicillin."
    (tmp_path / "one.jsonl").write_text(json.dumps({"id": "allergy", "turns": turns}) + "\n")
    parla("import", str(tmp_path / "one.jsonl"))
    (chat,) = json.loads(parla("chats", "--json").stdout)
    shown = json.loads(parla("show", chat["id"], "--json").stdout)
    (pin,) = shown["pins"]
    assert (pin["pin_type"], pin["importance"], pin["source_seq"]) == ("auto", 9.5, 5)
    assert {"section": "pins", "text": f"- {pin['content']}", "source": "turn 5"} in shown["context"]
    assert all(s["importance"] is not None for s in shown["summaries"] if s["level"] == 0)
    assert f"{pin['content']} (from turn 5)" in parla("show", chat["id"]).stdout
    mine = json.loads(parla("stats", "--chat", chat["id"][:8], "--json").stdout)
    assert (mine["chat"], mine["total_chats"], mine["total_messages"], mine["auto_pins"]) == (chat["id"], 1, 24, 1)
    assert "Forgot the pin" in parla("forget", chat["id"], "The user said").stdout  # as the user forgets any pin
    assert json.loads(parla("show", chat["id"], "--json").stdout)["pins"] == []


def test_regenerate_a_range(parla, tmp_path):
    write_jsonl(tmp_path / "long.jsonl", 1, turns=(35, 35))
    parla("import", str(tmp_path / "long.jsonl"))
    (chat,) = json.loads(parla("chats", "--json").stdout)
    out = parla("memory", "regenerate", chat["id"], "--range", "11-20").stdout
    assert "Regenerated 1 chunk summaries, 1 fact blocks and 0 meta summaries" in out
    bad = parla("memory", "regenerate", chat["id"], "--range", "5-14", ok=False)
    assert bad.exit_code == 1 and "not a run of whole chunks" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1


def test_backfill_fills_every_chat_and_regenerate_can_redo_facts_alone(parla, tmp_path):
    from tests.conftest import make_turns

    async def store_unsummarised() -> list[str]:
        async with open_memory(Settings()) as mem:
            long = await mem.store.create_chat(turns=make_turns(35, prefix="L"))
            short = await mem.store.create_chat(turns=make_turns(5, prefix="S"))
            return [long.chat.id, short.chat.id]

    long_id, _ = asyncio.run(store_unsummarised())
    assert json.loads(parla("stats", "--json").stdout)["total_summaries"] == 0
    result = parla("memory", "backfill", "--json")
    counts = json.loads(result.stdout)
    # 35 turns: folded down to the tail, 3 chunks of 10 with facts; the young chat is described
    assert counts == {
        "chats": 2,
        "described": 2,
        "turns_folded": 35 - 12,
        "chunk_summaries": 3,
        "fact_blocks": 3,
        "meta_summaries": 0,
        "profile_entries": 0,  # what these turns say is of the day ("discussed in detail today")
        "failed": {},
    }
    stats = json.loads(parla("stats", "--json").stdout)
    assert stats["total_summaries"] == 3 and stats["embedded_texts"] >= 2 + 3
    again = json.loads(parla("memory", "backfill", "--json").stdout)  # nothing is missing any more
    assert again["chunk_summaries"] == again["fact_blocks"] == again["turns_folded"] == again["described"] == 0
    assert "Backfilled 2 chats" in parla("memory", "backfill").stdout
    facts = parla("memory", "regenerate", long_id, "--facts-only").stdout
    assert "Regenerated 3 fact blocks" in facts and "chunk summaries" not in facts


def test_forgotten_items_are_listed_and_restored(parla, tmp_path):
    write_jsonl(tmp_path / "long.jsonl", 1, turns=(20, 20))
    parla("import", str(tmp_path / "long.jsonl"))
    (chat,) = json.loads(parla("chats", "--json").stdout)

    async def forget_two() -> str:
        async with open_memory(Settings()) as mem:
            await mem.store.add_pin(Pin(chat_id=chat["id"], content="Keys are under the mat"))
            pin, fact = (await memory_items(mem.store, chat["id"]))[:2]
            for item in (pin, fact):
                await set_forgotten(mem.store, mem.embedder, item, forgotten=True)
            return fact.content

    fact = asyncio.run(forget_two())
    listed = json.loads(parla("memory", "forgotten", chat["id"][:8], "--json").stdout)
    assert [(i["number"], i["kind"], i["text"]) for i in listed] == [
        (1, "pin", "Keys are under the mat"),
        (2, "fact", fact),
    ]
    assert f"Restored the fact: {fact}" in parla("memory", "restore", chat["id"][:8], "2").stdout
    assert [i["kind"] for i in json.loads(parla("memory", "forgotten", chat["id"], "--json").stdout)] == ["pin"]
    shown = json.loads(parla("show", chat["id"], "--json").stdout)
    assert any(fact in block["lines"] for block in shown["facts"]) and shown["pins"] == []
    bad = parla("memory", "restore", chat["id"], "5", ok=False)
    assert "has 1 forgotten items, not 5: `parla memory forgotten" in bad.stderr


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (["show", "nope"], {}, "no chat matches 'nope'"),
        (["search", "  "], {}, "search request is empty"),
        (["memory", "regenerate", "x", "--range", "ab"], {}, "a range is two message numbers like 11-20"),
        # "²" passed isdigit and int() refused it: a traceback (issue 25, item 14)
        (["memory", "regenerate", "x", "--range", "²-3"], {}, "a range is two message numbers like 11-20"),
        (["memory", "regenerate", "x", "--range", "1-99999999999999999999"], {}, "a range is two message numbers"),
        (["chats"], {"PARLA_TAIL": "many"}, "setting tail, from PARLA_TAIL in the environment: Input should be"),
        (["chats"], {"PARLA_TAIL": "40"}, "tail (40) must be smaller than summary_window_size"),
        (["search", "x"], {"PARLA_EMBEDDER": "gemini"}, "PARLA_EMBEDDER=gemini needs a Gemini API key"),
    ],
)
def test_errors_are_one_clear_line(parla, monkeypatch, args, env, message):
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    result = parla(*args, ok=False)
    assert result.exit_code == 1
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_switching_embedder_without_reembed_is_refused(parla, monkeypatch, gemini):
    parla("import", str(DATA / "search_chats.jsonl"))
    monkeypatch.setenv("PARLA_EMBEDDER", "gemini")
    monkeypatch.setenv("GEMINI_API_KEY", gemini.api_key)
    monkeypatch.setenv("PARLA_GEMINI_BASE_URL", gemini.base_url)
    refused = parla("search", "bread", ok=False)
    assert "run `parla memory reembed`" in refused.stderr
    parla("memory", "reembed")
    assert json.loads(parla("stats", "--json").stdout)["embedder"] == "gemini-gemini-embedding-001-768"
    assert json.loads(parla("search", "sourdough starter flour", "--json").stdout)["candidates"]


@pytest.mark.tier("process")
def test_installed_console_script(tmp_path):
    env = {**os.environ, "PARLA_STORE_PATH": str(tmp_path / "p.db"), "PARLA_CONFIG_FILE": str(tmp_path / "c.toml")}
    done = subprocess.run(
        [sys.executable, "-m", "parla.daemon", "stats", "--json"],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["total_chats"] == 0


def test_import_keeps_turns_when_summarising_fails_and_a_rerun_finishes(parla, monkeypatch, gemini, tmp_path):
    # Gemini embeddings have no offline stand-in (a store holds one embedder's vectors), so a
    # Gemini that keeps failing leaves the chats unsummarised until the rerun. Three chats, not all
    # twelve: the twelve made about 500 calls to the failing model (no cooldown) for the same checks.
    source = tmp_path / "three.jsonl"
    source.write_text("".join((DATA / "search_chats.jsonl").read_text().splitlines(keepends=True)[:3]))
    monkeypatch.setenv("PARLA_SUMMARIZER", "gemini")
    monkeypatch.setenv("PARLA_EMBEDDER", "gemini")
    monkeypatch.setenv("PARLA_MODEL_OFFLINE_COOLDOWN_S", "0")
    monkeypatch.setenv("GEMINI_API_KEY", gemini.api_key)
    monkeypatch.setenv("PARLA_GEMINI_BASE_URL", gemini.base_url)
    monkeypatch.setenv("PARLA_MODEL_RETRIES", "1")
    monkeypatch.setenv("PARLA_MODEL_RETRY_DELAY", "0.01")
    gemini.fail_next(500, times=1000, message="model down")
    first = parla("import", str(source), "--json")
    report = json.loads(first.stdout)
    assert report["imported"] == 3 and len(report["not_summarised"]) == 3
    assert "run the same import again to retry" in first.stderr
    assert json.loads(parla("stats", "--json").stdout)["total_messages"] == 18
    gemini.faults.clear()
    again = json.loads(parla("import", str(source), "--json").stdout)
    assert again["unchanged"] == 3 and again["not_summarised"] == []
    assert all(c["title"] for c in json.loads(parla("chats", "--json").stdout))


def test_text_output_shows_user_text_verbatim(parla, tmp_path):
    line = {
        "id": "brackets",
        "title": "[bold]not markup[/bold]",
        "turns": [{"role": "user", "text": "My list: [1] eggs [red]tomatoes[/red] and bread."}],
    }
    (tmp_path / "b.jsonl").write_text(json.dumps(line) + "\n")
    parla("import", str(tmp_path / "b.jsonl"))
    shown = parla("show", "brackets").stdout  # the id it was imported with
    assert "[bold]not markup[/bold]" in shown and "[red]tomatoes[/red]" in shown
    assert "[bold]not markup[/bold]" in parla("chats").stdout


def test_import_what_people_have(parla, tmp_path):
    """A BOM, the OpenAI messages shape with assistant and system roles, a Latin-1 line, a huge
    turn, then stdin, an edited re-import and --replace."""
    chatgpt = {
        "id": "conv-1",
        "messages": [
            {"role": "system", "content": "You are ChatGPT."},
            {"role": "user", "content": "How long do I proof a sourdough loaf?"},
            {"role": "assistant", "content": [{"type": "text", "text": "About four hours at 24 degrees."}]},
        ],
    }
    huge = {"id": "paste", "turns": [{"role": "user", "text": "Here is my log. " * 2000}]}
    latin = '{"turns": [{"role": "user", "text": "caf\u00e9"}]}'.encode("latin-1")
    source = tmp_path / "mixed.jsonl"
    source.write_bytes(
        b"\xef\xbb\xbf" + json.dumps(chatgpt).encode() + b"\n" + latin + b"\n" + json.dumps(huge).encode() + b"\n"
    )
    first = parla("import", str(source), "--json")
    report = json.loads(first.stdout)
    assert (report["imported"], report["turns_added"]) == (2, 2 + 3)
    assert report["skipped"][0]["line"] == 2 and "not UTF-8 text (byte 0xe9" in report["skipped"][0]["reason"]
    assert {"line": 1, "note": "1 system message skipped"} in report["notes"]
    assert {"line": 3, "note": "turn 1 (32,000 characters) split into 3 turns"} in report["notes"]
    assert "line 1: 1 system message skipped" in first.stderr and "iconv" in first.stderr
    shown = json.loads(parla("show", "conv-1", "--json").stdout)
    assert [t["role"] for t in shown["full_history"]] == ["user", "model"]

    runner = CliRunner()
    chatgpt["messages"][2]["content"] = "About five hours."
    chatgpt["messages"].append({"role": "user", "content": "Thanks!"})
    edited = json.dumps(chatgpt) + "\n"
    differs = runner.invoke(app, ["import", "-", "--json"], input=edited)
    assert differs.exit_code == 0, differs.output
    assert json.loads(differs.stdout)["differs"][0]["detail"] == "turn 2 differs from the stored chat's"
    assert "--replace" in differs.stderr
    replaced = runner.invoke(app, ["import", "-", "--replace"], input=edited)
    assert replaced.exit_code == 0 and "1 replaced" in replaced.stdout, replaced.output
    history = json.loads(parla("show", "conv-1", "--json").stdout)["full_history"]
    texts = [t["parts"][0]["text"] for t in history]
    assert texts == ["How long do I proof a sourdough loaf?", "About five hours.", "Thanks!"]


def test_an_import_where_every_line_is_skipped_fails(parla, tmp_path):
    (tmp_path / "bad.jsonl").write_text('{"turns": [{"role": "system", "text": "Be terse."}]}\n{nope\n')
    result = parla("import", str(tmp_path / "bad.jsonl"), ok=False)
    assert result.exit_code == 1
    assert "line 1: no user or assistant turn with text (1 system message skipped)" in result.stderr
    assert "parla: error: nothing imported: every line of" in result.stderr
    empty = CliRunner().invoke(app, ["import", "-"], input="")
    assert empty.exit_code == 1 and "stdin holds no chat" in empty.stderr
    missing = parla("import", str(tmp_path / "nope.jsonl"), ok=False)
    assert missing.exit_code == 1 and "no file" in missing.stderr


@pytest.mark.parametrize("fault", ["refused", "dropped", "unreachable"])
def test_import_with_a_key_gemini_cannot_use_summarises_offline_at_once(parla, monkeypatch, gemini, tmp_path, fault):
    """A key that is set but unusable (refused, connections dropped, nothing listening): the
    import does not wait through nested retries, and every chat is described and searchable.
    (Offline vectors: Gemini's have no offline stand-in, see the test above.)"""
    monkeypatch.setenv("PARLA_EMBEDDER", "offline")
    monkeypatch.setenv("GEMINI_API_KEY", "wrong-key" if fault == "refused" else gemini.api_key)
    monkeypatch.setenv("PARLA_MODEL_RETRY_DELAY", "0.05")
    if fault == "unreachable":
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]  # closed again: nothing listens there
        monkeypatch.setenv("PARLA_GEMINI_BASE_URL", f"http://127.0.0.1:{port}")
    else:
        monkeypatch.setenv("PARLA_GEMINI_BASE_URL", gemini.base_url)
    if fault == "dropped":
        gemini.drop_next(1000)
    source = tmp_path / "three.jsonl"
    source.write_text("".join((DATA / "search_chats.jsonl").read_text().splitlines(keepends=True)[:3]))
    started = time.perf_counter()
    result = parla("import", str(source), "--json")
    elapsed = time.perf_counter() - started
    calls = len(gemini.requests)
    print(f"import of 3 chats with Gemini {fault}: {elapsed:.2f} s, {calls} Gemini calls")
    report = json.loads(result.stdout)
    assert report["imported"] == 3 and report["not_summarised"] == [], result.stderr
    assert "3 chats were summarised offline because Gemini could not be used" in result.stderr
    # one call per compaction running at once (2), then the cooldown: no call per chat, no retry
    assert calls == 0 if fault == "unreachable" else 1 <= calls <= 2
    chats = json.loads(parla("chats", "--json").stdout)
    assert all(c["title"] for c in chats) and len(chats) == 3
    found = json.loads(parla("search", "the bread with the starter", "--json").stdout)
    assert found["decision"] == "switch" and "starter" in found["candidates"][0]["matched_text"].lower()


def test_show_names_the_pages_a_look_up_came_from(parla, tmp_path):
    spoken = Turn.of(
        "model",
        "Light rain tomorrow in Turin.",
        sources=[WebSource(title="meteo.it", uri="https://vertexaisearch.cloud.google.com/grounding-api-redirect/AbC")],
    )

    async def stored() -> str:
        async with SQLiteChatStore(tmp_path / "parla.db") as store:
            turns = [Turn.of("user", "Weather tomorrow in Turin?"), spoken]
            return (await store.create_chat(title="Weather", turns=turns)).chat.id

    chat = asyncio.run(stored())
    text = parla("show", chat).stdout
    assert "    2 Assistant: Light rain tomorrow in Turin.\n      source: meteo.it https://vertexaisearch" in text
    shown = json.loads(parla("show", chat, "--json").stdout)
    assert [t["sources"] for t in shown["full_history"]] == [[], [s.model_dump() for s in spoken.sources]]
    exported = parla("export", chat).stdout
    assert "Light rain tomorrow in Turin.\n\nSources: [meteo.it](https://vertexaisearch.cloud.google.com/" in exported
