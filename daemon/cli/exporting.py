"""`parla export`: chats as Markdown to read, or as the JSONL `parla import` reads back unchanged."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import typer

from ..errors import CommandFailed
from ..private_files import write_private
from ..terminal_text import json_text, visible
from .support import command, err, fail, iso, load_settings, open_store, resolve_chat, when

if TYPE_CHECKING:
    from parla.records.chat import ChatHistory
    from parla.records.turn import Turn

ExportFormat = Literal["md", "jsonl"]


def export_line(history: ChatHistory) -> dict[str, Any]:
    """A chat as one line of the import format: importing it gives the same chat back."""
    c = history.chat
    return {
        "id": c.id,
        "title": c.title,
        "created_at": iso(c.created_at),
        "turns": [_export_turn(t) for t in history.full_history],
    }


def _export_turn(t: Turn) -> dict[str, Any]:
    # who answered stays with an imported answer ("ChatGPT (gpt-4o)") across export and import
    shape = {**t.wire_shape(), "created_at": iso(t.created_at)}
    return {**shape, "model_variant": t.model_variant} if t.source == "import" and t.model_variant else shape


def _speaker(t: Turn) -> str:
    if t.role == "user":
        return "You"
    return t.model_variant if t.source == "import" and t.model_variant else "Parla"


def export_markdown(history: ChatHistory) -> str:
    c = history.chat
    about = f"Chat {c.id}, started {when(c.created_at)}, last activity {when(c.last_activity_at)}"
    lines = [f"# {c.display_title}", "", f"{about}, {len(history.full_history)} turns."]
    for t in history.full_history:
        note = ", interrupted" if t.interrupted else ""
        lines += ["", f"**{_speaker(t)}** ({when(t.created_at)}{note})", "", t.text]
        if t.sources:
            lines += ["", "Sources: " + ", ".join(f"[{s.title}]({s.uri})" for s in t.sources)]
    return "\n".join(lines) + "\n"


@command
async def export(
    chats: list[str] = typer.Argument(None, help="Chats to export (id, id start or exact title); none: --all."),
    all_chats: bool = typer.Option(False, "--all", help="Export every chat."),
    fmt: ExportFormat | None = typer.Option(
        None, "--format", "-f", help="md (to read) or jsonl (for `parla import`); default: from --output, else md."
    ),
    output: Path | None = typer.Option(
        None, "--output", "-o", help="Write to this file instead of stdout (`-`: stdout)."
    ),
) -> None:
    """Write chats as Markdown to read, or as JSONL that `parla import` reads back unchanged."""
    if bool(chats) == all_chats:
        raise fail("name the chats to export, or give --all")
    if output == Path("-"):  # the usual name of standard output
        output = None
    chosen: ExportFormat = fmt or ("jsonl" if output and output.suffix in (".jsonl", ".json") else "md")
    async with open_store(load_settings()) as store:
        if all_chats:
            listed = await store.list_chats(limit=1_000_000)
            ids = [c.id for c in sorted(listed, key=lambda c: c.created_at)]
        else:
            ids = list(dict.fromkeys([await resolve_chat(store, ref) for ref in chats]))
        histories = [await store.load_history(cid) for cid in ids]
    if chosen == "jsonl":
        text = "".join(json_text(export_line(h)) + "\n" for h in histories)
    else:
        text = "\n".join(export_markdown(h) for h in histories)
    if output is None:
        # on a terminal it is read, not kept: the Markdown's control characters are shown (JSON has none)
        sys.stdout.write(visible(text) if sys.stdout.isatty() else text)
        return
    try:
        write_private(output, text)
    except OSError as e:
        raise CommandFailed(f"cannot write {output}: {e}") from e
    err.print(f"Wrote {len(histories)} chats to {output} ({chosen}).", markup=False)
