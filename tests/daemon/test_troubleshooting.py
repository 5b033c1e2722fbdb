"""The troubleshooting page covers every error line Parla prints that has a fix: each message of a
ParlaError raised (or built by its class), of the CLI's `fail(...)` and of the daemon's log lines
at error level is found in the code here, and its key (the start of the line as the page quotes it,
`…` for a part that varies, as long as it takes to tell it from the other lines) must be on the
page, or below with why it is not."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.tier("fast")

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("daemon", "memory", "voice", "tools", "ui")
PAGE = ROOT / "docs/guides/troubleshooting.md"

# Key phrases of messages the page leaves out, and why: none has a fix a user could apply.
NOT_ON_THE_PAGE = {
    # a caller of the store broke its contract: a bug in Parla, reported with its traceback context
    "the outbox is not open": "a bug",
    "the store is not open": "a bug",
    "facts with lines need the embedding of exactly their text": "a bug",
    "the same turn id appears twice in one append": "a bug",
    "vectors of several dimensions given:": "a bug",
    "embedded texts would be left with old vectors: embed every text from embedded_texts()": "a bug",
    "is already stored in chat": "a bug",
    "at the start of a line": "for whoever writes a migration, at test time",
    "embeddings of sizes": "the model broke its answer's contract; the next run retries",
    # said to the model, which tells the user in its own words and recovers by itself
    "; find it with list_chats first": "said to the model",
    "; search by what it was about instead": "said to the model",
    "server is not running now; it is being restarted": "said to the model",
    "server stopped; it is being restarted": "said to the model",
    "server refused": "said to the model",
    "the look-up gave no answer (finish reason:": "said to the model",
    "an outbox operation failed after its caller was cancelled": "a bug (logged with its traceback)",
    "(not retried for": "adds to another message, which the page has",
}


TRIM = " :;,.()"


@dataclass(frozen=True)
class Message:
    where: str
    text: str  # with `…` for each part that varies


def key(text: str, others: set[str]) -> str:
    """The line's words from its first fixed part of some length on (a line may start with a
    path), as few as tell it from every other line."""
    parts = text.split("…")
    first = next(
        (i for i, p in enumerate(parts) if len(p.strip(TRIM)) >= 12),
        max(range(len(parts)), key=lambda i: len(parts[i].strip(TRIM))),
    )
    words = "…".join(parts[first:]).split(" ")
    for n in range(1, len(words) + 1):
        found = " ".join(words[:n]).strip(TRIM)
        if len(found) >= 12 and not any(found in other for other in others - {text}):
            return found
    return " ".join(words).strip(TRIM)


def _template(node: ast.expr) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return re.sub(r"%[-.\d]*[sdrf]", "…", node.value)
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "…" for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return f"{_template(node.left) or '…'}{_template(node.right) or '…'}"
    return None


def _parsed() -> list[tuple[Path, ast.Module]]:
    return [(p, ast.parse(p.read_text(), str(p))) for d in SOURCES for p in sorted((ROOT / d).rglob("*.py"))]


def _user_errors(trees: list[tuple[Path, ast.Module]]) -> set[str]:
    """Names of the classes that derive from ParlaError, the errors that reach the user as a line."""
    bases = {
        n.name: {ast.unparse(b).rsplit(".", 1)[-1] for b in n.bases}
        for _, tree in trees
        for n in ast.walk(tree)
        if isinstance(n, ast.ClassDef)
    }
    found = {"ParlaError"}
    while grown := {name for name, of in bases.items() if of & found} - found:
        found |= grown
    return found


def messages() -> Iterator[Message]:
    trees = _parsed()
    errors = _user_errors(trees)
    for path, tree in trees:
        for node in ast.walk(tree):
            call = None
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
                if ast.unparse(node.exc.func).rsplit(".", 1)[-1] in errors:
                    call = node.exc
            elif isinstance(node, ast.ClassDef) and {ast.unparse(b).rsplit(".", 1)[-1] for b in node.bases} & errors:
                for inner in ast.walk(node):
                    if isinstance(inner, ast.Call) and ast.unparse(inner.func) == "super().__init__":
                        yield from _message(path, inner)
            elif isinstance(node, ast.Call) and ast.unparse(node.func) in ("fail", "log.error", "logger.error"):
                call = node
            if call is not None:
                yield from _message(path, call)


def _message(path: Path, call: ast.Call) -> Iterator[Message]:
    text = _template(call.args[0]) if call.args else None
    if text and re.search(r"[a-z]{4}", text):  # not a bare wrapper of another message
        yield Message(f"{path.relative_to(ROOT)}:{call.lineno}", text)


def test_the_collector_finds_the_messages_of_each_kind():
    found = {m.text for m in messages()}
    assert "deleting cannot be undone: add --yes to delete without a question" in found  # fail(...)
    assert "a Parla daemon is already running (socket …); `parla stop` ends it" in found  # its class builds it
    assert "… is not valid TOML: …" in found  # raise SettingsError(f"...")
    assert "the store refused turns for good; …" in found  # log.error("...%s")
    assert len(found) > 100


def uncovered(page: str, found: list[Message]) -> list[str]:
    texts = {m.text for m in found}
    return sorted(
        {
            f"{m.where}: {key(m.text, texts)!r} of {m.text!r}"
            for m in found
            if key(m.text, texts) not in page and not any(k in m.text for k in NOT_ON_THE_PAGE)
        }
    )


def test_every_error_line_with_a_fix_is_on_the_troubleshooting_page():
    found = list(messages())
    missing = uncovered(PAGE.read_text(), found)
    assert not missing, "add these to docs/guides/troubleshooting.md (or to NOT_ON_THE_PAGE, with why):\n" + "\n".join(
        missing
    )
    stale = [k for k in NOT_ON_THE_PAGE if not any(k in m.text for m in found)]
    assert not stale, f"NOT_ON_THE_PAGE names messages the code no longer has: {stale}"


def test_a_line_taken_off_the_page_is_named_by_its_key_whatever_its_values():
    found = list(messages())
    page = PAGE.read_text().replace("### `the speech command … took longer than … s`", "")
    (missing,) = uncovered(page, found)
    assert "'the speech command … took' of 'the speech command … took longer than … s'" in missing
