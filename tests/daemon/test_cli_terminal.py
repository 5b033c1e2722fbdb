"""What a user sees in an ordinary terminal: help that reads as sentences, tables that fit 80
columns, and a `search --json` whose every field is documented."""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path
from typing import get_args

import pytest
from typer.testing import CliRunner

from parla.daemon.cli import app
from parla.daemon.cli.support import out
from parla.memory.retrieval.search import Candidate, SearchResult
from parla.memory.store.protocol import TextKind

pytestmark = pytest.mark.tier("fast")

DATA = Path(__file__).parents[1] / "data" / "search_chats.jsonl"
DOCS = Path(__file__).parents[2] / "docs" / "design" / "first-week.md"
LONG_TITLE = "Gift ideas for Mom's 60th birthday party with the whole family and the neighbours"


def _help(*args: str, columns: int, monkeypatch) -> str:
    monkeypatch.setenv("COLUMNS", str(columns))  # typer's help console reads it when it is made
    result = CliRunner().invoke(app, [*args, "--help"])
    assert result.exit_code == 0, result.output
    return result.stdout


def _commands() -> list[list[str]]:
    import typer

    def walk(group, path):
        for name, cmd in group.commands.items():
            yield [*path, name]
            if hasattr(cmd, "commands"):
                yield from walk(cmd, [*path, name])

    return [[], *walk(typer.main.get_command(app), [])]


def _prose(doc: str) -> list[str]:
    """The paragraphs of a help text that are prose (not a `\\b` block kept as written), each on one line."""
    paragraphs = inspect.cleandoc(doc).split("\n\n")
    return [" ".join(p.split()) for p in paragraphs if p.strip() and not p.startswith("\b")]


@pytest.mark.parametrize("args", _commands(), ids=lambda a: " ".join(a) or "parla")
def test_help_shows_no_type_after_a_flag_and_breaks_lines_only_where_the_terminal_ends(args, monkeypatch):
    import typer

    shown = _help(*args, columns=1200, monkeypatch=monkeypatch)
    assert "<bool>" not in shown and " <int> " not in shown.split("--verbose", 1)[-1][:40]
    lines = {" ".join(line.strip(" │").split()) for line in shown.splitlines()}
    command = typer.main.get_command(app)
    for name in args:
        command = command.commands[name]
    # at 1200 columns each paragraph fits one line: a line break inside one was the text's own
    source = inspect.unwrap(command.callback).__doc__ if command.callback else command.help
    for paragraph in _prose(source or ""):
        assert any(paragraph in line for line in lines), f"{paragraph!r} is broken across lines"
    for sub in getattr(command, "commands", {}).values():
        first = _prose((inspect.unwrap(sub.callback).__doc__ if sub.callback else sub.help) or "")[0]
        assert any(line.endswith(first) for line in lines), f"{first!r} is broken across lines"


def test_help_at_80_columns_keeps_the_formats_list_as_written(monkeypatch):
    shown = "\n".join(line.rstrip() for line in _help("import", columns=80, monkeypatch=monkeypatch).splitlines())
    assert "\n   ChatGPT: the .zip it mails, or its conversations.json\n" in shown
    assert "\b" not in shown and "\n\n\n" not in shown


def _table_lines(text: str) -> tuple[list[str], list[str]]:
    """The header's lines and the rows' lines of a printed table."""
    lines = text.splitlines()
    return [line for line in lines if line.startswith("┃")], [line for line in lines if line.startswith("│")]


@pytest.fixture
def narrow(monkeypatch):
    def at(columns: int) -> None:
        monkeypatch.setattr(out, "_width", columns)

    return at


def test_chats_and_search_tables_fit_80_columns_one_line_a_chat(parla, narrow):
    parla("import", str(DATA))
    parla("rename", "japan-trip", LONG_TITLE)
    narrow(80)
    chats = parla("chats").stdout
    assert max(len(line) for line in chats.splitlines()) <= 80
    header, rows = _table_lines(chats)
    assert (len(header), len(rows)) == (1, 12)  # one line a chat
    assert "Gift ideas for Mom's 60th" in chats and "…" in chats  # cut, not wrapped
    found = parla("search", "the trip to Japan in April").stdout
    assert max(len(line) for line in found.splitlines() if line[0] in "┏┃┡│└") <= 80  # the terminal wraps prose
    header, rows = _table_lines(found)
    candidates = json.loads(parla("search", "the trip to Japan in April", "--json").stdout)["candidates"]
    assert (len(header), len(rows)) == (1, 2 * len(candidates))  # its title, then what matched
    assert "score" in header[0] and "matched" in header[0]
    narrow(200)  # room for every column
    (wide,), _ = _table_lines(parla("search", "the trip to Japan in April").stdout)
    assert all(name in wide for name in ("meaning", "words", "last activity"))


def _documented_fields() -> tuple[set[str], set[str]]:
    text = DOCS.read_text(encoding="utf-8")
    section = text.split("## `parla search --json`", 1)[1].split("\n## ", 1)[0]
    fields = set(re.findall(r"^\| `([a-z_.\[\]]+)` \|", section, flags=re.MULTILINE))
    kinds = set(re.findall(r"^- `([a-z_]+)`:", section, flags=re.MULTILINE))
    return fields, kinds


def test_every_search_json_field_and_matched_kind_is_documented(parla):
    parla("import", str(DATA))
    shown = json.loads(parla("search", "the trip to Japan in April", "--json").stdout)
    fields, kinds = _documented_fields()
    assert set(shown) == set(SearchResult.model_fields) == {f for f in fields if "." not in f}
    assert set(shown["candidates"][0]) == {f.split(".", 1)[1] for f in fields if f.startswith("candidates[].")}
    assert set(Candidate.model_fields) == set(shown["candidates"][0])
    assert kinds == {*get_args(TextKind), "title"}


def test_search_says_what_matched_in_the_guides_words(parla, narrow):
    # the matched column read `summary_text (words: japan)` and `chunk 1-10` (issue 42, item 17)
    parla("import", str(DATA))
    narrow(200)
    shown = ""
    for request in ("the trip to Japan in April", "sourdough starter smells", "my tomato plants"):
        shown += parla("search", request).stdout
    _, rows = _table_lines(shown)
    matched = [row.split("│")[2].strip() for row in rows if not row.split("│")[1].strip()]  # under each title
    assert matched and not [m for m in matched if m.startswith(("summary_text", "chunk", "meta", "facts", "title"))]
    assert any(m.startswith(("the description", "the title", "turns ")) for m in matched), matched


def test_at_80_columns_stats_search_and_the_profile_show_paths_titles_and_entries_whole(
    parla, narrow, tmp_path, monkeypatch
):
    # stats cut the store path, search cut titles to 23 characters, and each profile entry
    # wrapped to 5-7 lines (issue 42, item 18)
    store = tmp_path / "a folder with a long name for the store" / "and one more inside it" / "parla.db"
    monkeypatch.setenv("PARLA_STORE_PATH", str(store))
    parla("import", str(DATA))
    title = "Gift ideas for Mom's 60th birthday with the family"
    parla("rename", "japan-trip", title)
    said = [
        "I live in Turin, in the old town near the river, with my wife Anna and our two cats",
        "I am allergic to penicillin and must never be given it, not even a small dose",
        "My daughter Sofia was born on 12 March 2015",
    ]
    for entry in said:
        parla("profile", "add", entry)
    narrow(80)
    stats = parla("stats").stdout
    assert str(store) in stats.replace("\n", "") and max(len(line) for line in stats.splitlines()[1:]) <= 80
    found = parla("search", "gift ideas for mom").stdout
    _, rows = _table_lines(found)
    assert rows[0].split("│")[2].strip() == title and max(len(line) for line in rows) <= 80
    assert rows[1].split("│")[2].strip().startswith("the title")  # what matched, under its title
    listed = parla("profile", "list").stdout
    lines = listed.splitlines()
    assert max(len(line) for line in lines) <= 80
    text = " ".join(" ".join(line.split()) for line in lines)
    entries = [e["text"] for e in json.loads(parla("profile", "list", "--json").stdout)]
    assert set(said) <= set(entries) and all(entry in text for entry in entries)
    assert len(lines) <= 3 * len(entries)  # the entry (two lines at most here) and where it was said
