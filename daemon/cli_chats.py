"""Managing chats from the command line: `parla rm`, `rename`, `export` and `forget`."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import typer
from rich.markup import escape

from daemon.cli_support import (
    command,
    err,
    fail,
    iso,
    load_settings,
    open_memory,
    out,
    resolve_chat,
    running_daemon_chat,
    when,
)

if TYPE_CHECKING:
    from memory.chat import ChatHistory

ExportFormat = Literal["md", "jsonl"]


@command
async def rm(
    chats: list[str] = typer.Argument(..., help="Chats to delete: id, id start (4+ characters) or exact title."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Delete without asking."),
) -> None:
    """Delete chats with everything in them (turns, summaries, facts, pins). Asks first."""
    settings = load_settings()
    async with open_memory(settings) as mem:
        ids = list(dict.fromkeys([await resolve_chat(mem, ref) for ref in chats]))
        found = [await mem.store.get_chat(cid) for cid in ids]
        current = await running_daemon_chat(settings.control_socket)
        if current in ids:
            raise fail("the daemon is talking in that chat: `parla new` or `parla switch` first, then delete it")
        for c in found:
            line = f"  {c.id[:8]}  {c.display_title}  ({c.turn_count} turns, last {when(c.last_activity_at)})"
            err.print(line, markup=False)
        if not yes:
            if not sys.stdin.isatty():
                raise fail("deleting cannot be undone: add --yes to delete without a question")
            if not typer.confirm(f"Delete {len(found)} chat{'s' if len(found) > 1 else ''} for good?", err=True):
                raise fail("nothing deleted")
        for c in found:
            await mem.store.delete_chat(c.id)
    out.print(f"Deleted {len(found)} chat{'s' if len(found) > 1 else ''}.")


@command
async def rename(
    chat: str = typer.Argument(..., help="Chat id, id start or exact title."),
    title: str = typer.Argument(..., help="The new title (kept: summaries never replace a title you gave)."),
) -> None:
    """Give a chat a title of your own."""
    async with open_memory(load_settings()) as mem:
        renamed = await mem.store.rename_chat(await resolve_chat(mem, chat), title)
    out.print(f"Renamed {renamed.id[:8]} to {escape(renamed.display_title)}.")


def export_line(history: ChatHistory) -> dict[str, Any]:
    """A chat as one line of the import format: importing it gives the same chat back."""
    c = history.chat
    return {
        "id": c.id,
        "title": c.title,
        "created_at": iso(c.created_at),
        "turns": [{**t.wire_shape(), "created_at": iso(t.created_at)} for t in history.full_history],
    }


def export_markdown(history: ChatHistory) -> str:
    c = history.chat
    about = f"Chat {c.id}, started {when(c.created_at)}, last activity {when(c.last_activity_at)}"
    lines = [f"# {c.display_title}", "", f"{about}, {len(history.full_history)} turns."]
    for t in history.full_history:
        speaker = "You" if t.role == "user" else "Parla"
        note = ", interrupted" if t.interrupted else ""
        lines += ["", f"**{speaker}** ({when(t.created_at)}{note})", "", t.text]
    return "\n".join(lines) + "\n"


@command
async def export(
    chats: list[str] = typer.Argument(None, help="Chats to export (id, id start or exact title); none: --all."),
    all_chats: bool = typer.Option(False, "--all", help="Export every chat."),
    fmt: ExportFormat | None = typer.Option(
        None, "--format", "-f", help="md (to read) or jsonl (for `parla import`); default: from --output, else md."
    ),
    output: Path | None = typer.Option(None, "--output", "-o", help="Write to this file instead of stdout."),
) -> None:
    """Write chats as Markdown to read, or as JSONL that `parla import` reads back unchanged."""
    if bool(chats) == all_chats:
        raise fail("name the chats to export, or give --all")
    chosen: ExportFormat = fmt or ("jsonl" if output and output.suffix in (".jsonl", ".json") else "md")
    async with open_memory(load_settings()) as mem:
        if all_chats:
            listed = await mem.store.list_chats(limit=1_000_000)
            ids = [c.id for c in sorted(listed, key=lambda c: c.created_at)]
        else:
            ids = list(dict.fromkeys([await resolve_chat(mem, ref) for ref in chats]))
        histories = [await mem.store.load_history(cid) for cid in ids]
    if chosen == "jsonl":
        text = "".join(json.dumps(export_line(h), ensure_ascii=False) + "\n" for h in histories)
    else:
        text = "\n".join(export_markdown(h) for h in histories)
    if output is None:
        sys.stdout.write(text)
        return
    output.write_text(text, encoding="utf-8")
    err.print(f"Wrote {len(histories)} chats to {output} ({chosen}).", markup=False)


@command
async def forget(
    chat: str = typer.Argument(..., help="Chat id, id start or exact title."),
    what: str = typer.Argument(..., help="The pin or fact to forget: its text, or enough of it to be the only match."),
) -> None:
    """Take a pin or a fact out of a chat's memory (it no longer reaches the model or search);
    `parla memory forgotten` lists what was forgotten and `parla memory restore` brings it back."""
    from memory.forgetting import memory_items, set_forgotten

    wanted = what.strip().casefold()
    if not wanted:
        raise fail("say what to forget")
    async with open_memory(load_settings()) as mem:
        items = await memory_items(mem.store, await resolve_chat(mem, chat))
        exact = [i for i in items if i.content.casefold() == wanted]
        matches = exact or [i for i in items if wanted in i.content.casefold()]
        if len(matches) != 1:
            if not matches:
                raise fail(f"no pin or fact of this chat contains {what!r}; `parla show {chat}` lists them")
            names = "; ".join(f"[{i.kind}] {i.content}" for i in matches[:5])
            raise fail(f"{what!r} matches {len(matches)} items: {names}; give more of the text")
        await set_forgotten(mem.store, mem.embedder, matches[0], forgotten=True)
    out.print(f"Forgot the {matches[0].kind}: {escape(matches[0].content)}")


COMMANDS = {"rename": rename, "export": export, "forget": forget, "rm": rm}
