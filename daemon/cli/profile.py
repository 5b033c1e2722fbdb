"""What Parla knows: `parla recall` (what was said about something, in one chat or in every chat,
as the `recall` tool finds it) and `parla profile ...`, what Parla knows about the user across
chats (parla.records.profile): list it, add to it, edit, forget and restore entries. An entry is named by its number in `parla profile
list` or by the start of its id (`parla profile list --all` shows every id, superseded and
forgotten entries too)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ..errors import CommandFailed
from ..terminal_text import visible
from .support import (
    MEMORY,
    by_number_or_id,
    command,
    emit_json,
    group,
    iso,
    load_settings,
    open_memory,
    out,
    resolve_chat,
    when,
)

if TYPE_CHECKING:
    from parla.memory.store.protocol import MemoryRecords
    from parla.records.profile import ProfileEntry


def _state(entry: ProfileEntry) -> str:
    if entry.forgotten_at is not None:
        return "forgotten"
    return "current" if entry.superseded_by is None else "superseded"


def _entry_json(number: int | None, entry: ProfileEntry) -> dict[str, Any]:
    return {
        "number": number,
        "id": entry.id,
        "text": entry.content,
        "importance": entry.importance,
        "about": entry.subject,
        "origin": entry.origin,
        "state": _state(entry),
        "chat_id": entry.chat_id,
        "turn": entry.source_seq,
        "said_at": iso(entry.said_at),
        "superseded_by": entry.superseded_by,
    }


async def _find(store: MemoryRecords, ref: str) -> ProfileEntry:
    """The entry numbered `ref` in `parla profile list`, or the one whose id starts with it."""
    history = await store.list_profile(history=True)
    found = by_number_or_id(await store.list_profile(), ref, history, lambda e: e.id)
    if len(found) != 1:
        what = "no entry" if not found else f"{len(found)} entries"
        raise CommandFailed(f"{what} of the profile match {ref!r}: `parla profile list --all` shows numbers and ids")
    return found[0]


@command
async def list_(
    everything: bool = typer.Option(False, "--all", help="Superseded and forgotten entries too, newest first."),
    as_json: bool = typer.Option(False, "--json", help="Print as JSON."),
) -> None:
    """What Parla knows about you, most important first, with where each entry was said."""
    async with open_memory(load_settings()) as mem:
        entries = await mem.store.list_profile(history=everything)
    numbered = [(None if everything else n, e) for n, e in enumerate(entries, start=1)]
    if as_json:
        emit_json([_entry_json(n, e) for n, e in numbered], "profile list")
        return
    if not entries:
        out.print("Parla knows nothing about you yet: facts you mention in any chat come here.")
        return
    # each entry as a paragraph the width of the terminal, what it is about and where it was said
    # on a line under it: in a table's columns an entry wrapped to five lines and more at 80
    listing = Table.grid(padding=(0, 1))
    listing.add_column(justify="right", no_wrap=True)
    listing.add_column()
    for n, e in numbered:
        about = f", about {e.subject}" if e.subject else ""
        said = f"said {when(e.said_at)}" + (f" in chat {e.chat_id[:8]}, turn {e.source_seq}" if e.chat_id else "")
        state = "" if _state(e) == "current" else f"; {_state(e)}"
        details = Text(visible(f"importance {e.importance:g}{about}; {said}{state}"), style="dim")
        listing.add_row(f"{n}." if n else e.id[:8], Text.assemble(visible(e.content), "\n", details))
    out.print(listing)


@command
async def add(
    text: str = typer.Argument(..., help="The fact about you, as a short sentence."),
    importance: float = typer.Option(5.0, min=0, max=10, help="0-10: how much it matters."),
    about: str | None = typer.Option(None, help="What it is about ('home city'): it replaces an older entry of it."),
) -> None:
    """Tell Parla something about you; every chat knows it from then on."""
    from parla.memory.language.profile_rules import subject_of
    from parla.records.profile import ProfileEntry

    async with open_memory(load_settings()) as mem:
        entry = ProfileEntry(
            content=text.strip(), importance=importance, subject=about or subject_of(text), origin="user"
        )
        (stored,) = await mem.store.save_profile([entry])
    out.print(f"Added {stored.id[:8]}: {escape(stored.content)}")


@command
async def edit(
    entry: str = typer.Argument(..., help="The entry's number in `parla profile list`, or its id."),
    text: str | None = typer.Argument(None, help="Its new text (default: as it is)."),
    importance: float | None = typer.Option(None, min=0, max=10, help="Its new importance, 0-10."),
    about: str | None = typer.Option(None, help="What it is about, e.g. 'home city'."),
) -> None:
    """Correct an entry: its text, importance or what it is about."""
    async with open_memory(load_settings()) as mem:
        found = await _find(mem.store, entry)
        changes: dict[str, Any] = {"content": text.strip()} if text else {}
        if importance is not None:
            changes["importance"] = importance
        if about is not None:
            changes["subject"] = about
        # validated again: the same rules as a new entry
        edited = type(found).model_validate({**found.model_dump(), **changes})
        (stored,) = await mem.store.save_profile([edited], edit=True)
    out.print(f"Edited {stored.id[:8]}: {escape(stored.content)}")


async def _set_forgotten(entry: str, forgotten: bool) -> None:
    async with open_memory(load_settings()) as mem:
        found = await _find(mem.store, entry)
        stored = await mem.store.set_profile_forgotten(found.id, forgotten)
    out.print(f"{'Forgot' if forgotten else 'Restored'} {stored.id[:8]}: {escape(stored.content)}")


@command
async def forget(
    entry: str = typer.Argument(..., help="The entry's number in `parla profile list`, or its id."),
) -> None:
    """Take an entry out of every chat's context (kept, restorable with `parla profile restore`)."""
    await _set_forgotten(entry, True)


@command
async def restore(entry: str = typer.Argument(..., help="The entry's id, from `parla profile list --all`.")) -> None:
    """Bring a forgotten entry back."""
    await _set_forgotten(entry, False)


@command
async def recall(
    request: str = typer.Argument(..., help='What to look for, e.g. "when did I book the ferry".'),
    chat: str | None = typer.Option(None, help="Look in this chat only (id, id prefix or exact title)."),
    as_json: bool = typer.Option(False, "--json", help="Print as JSON."),
) -> None:
    """What was said or kept about something, in every chat (or one), with when it was said."""
    from parla.memory.retrieval.recall import Recall
    from parla.records.search_result import found_in

    settings = load_settings()
    async with open_memory(settings) as mem:
        scope = await resolve_chat(mem.store, chat) if chat else None
        recaller = Recall(mem.store, mem.embedder, settings)
        found = await recaller.recall(request, scope)
    rows = [
        {
            "chat_id": r.chat_id,
            "title": r.title,
            "kind": r.kind,
            "turns": r.range.label if r.range else None,
            "said_at": iso(r.said_at),
            "text": r.text,
        }
        for r in found
    ]
    if as_json:
        emit_json(rows, "recall")
        return
    if not rows:
        out.print(f"Nothing was said or kept about {escape(request)!r}.")
        return
    for r in found:
        where = f"chat {r.chat_id[:8]}" + (f" ({escape(r.title)})" if r.title else "")
        said = f", said {when(r.said_at)}" if r.said_at else ""
        out.print(f"[bold]{where}, {found_in(r.kind, r.range)}{said}[/bold]\n{escape(r.text)}\n")


COMMANDS = {
    "recall": recall,
    "profile": group(
        "What Parla knows about you across chats: list, add, edit, forget, restore.",
        {"list": list_, "add": add, "edit": edit, "forget": forget, "restore": restore},
    ),
}
PANEL = MEMORY
