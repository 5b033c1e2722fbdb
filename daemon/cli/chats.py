"""The chats in the memory from the command line: `parla chats`, `show`, `search`, `stats`, `rm`,
`rename` and `forget` (and `import` and `export`, in daemon.cli.importing and daemon.cli.exporting)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import typer
from rich.markup import escape
from rich.table import Table

from parla.memory.errors import WriteQueued

from .exporting import export
from .importing import import_chats
from .support import (
    CHATS,
    command,
    emit_json,
    err,
    fail,
    iso,
    load_settings,
    open_memory,
    open_store,
    out,
    resolve_chat,
    running_daemon_chat,
    when,
)
from .tables import Cell, Column, fitted

if TYPE_CHECKING:
    from parla.records.search_result import SearchResult

    from ..settings import Settings


# -- chats, show ------------------------------------------------------------------------------


@command
async def list_chats(
    limit: int = typer.Option(50, min=1, help="How many, most recent first."),
    as_json: bool = typer.Option(False, "--json", help="Print as JSON."),
) -> None:
    """List chats: title, last activity, turn counts."""
    async with open_store(load_settings()) as store:
        chats = await store.list_chats(limit)
    rows = [
        {
            "id": c.id,
            "title": c.title,
            "created_at": iso(c.created_at),
            "last_activity_at": iso(c.last_activity_at),
            "turns": c.turn_count,
            "assistant_turns": c.turn_count - c.summarized_through + (1 if c.rolling_summary else 0),
            "summarized_through": c.summarized_through,
        }
        for c in chats
    ]
    if as_json:
        emit_json(rows, "chats")
        return
    if not rows:
        out.print("No chats yet. Import some with `parla import FILE.jsonl`.")
        return
    columns = [
        Column("id"),
        Column("title", text=True, least=30),
        Column("last activity"),
        Column("turns", justify="right"),
        Column("model sees", drop=1, justify="right"),
    ]
    shown = [
        [c.id[:8], c.display_title, when(c.last_activity_at), str(c.turn_count), str(row["assistant_turns"])]
        for c, row in zip(chats, rows, strict=True)
    ]
    out.print(fitted(columns, shown, out.width))


def _turn_json(t: Any) -> dict[str, Any]:
    return {
        **t.wire_shape(),
        "id": t.id,
        "seq": t.seq,
        "created_at": iso(t.created_at),
        "interrupted": t.interrupted,
        "source": t.source,
        "model_variant": t.model_variant,
        "sources": [s.model_dump() for s in t.sources],
    }


@command
async def show(
    chat: str = typer.Argument(
        ..., help="Chat id, id prefix (4+ characters), exact title, or the id it was imported with."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print as JSON."),
    turns: int = typer.Option(10, min=0, help="How many of the latest turns to print (text output)."),
) -> None:
    """Show one chat: full vs assistant history, summaries, facts, pins, token counts."""
    from parla.kernel.tokens import estimate_tokens
    from parla.memory.context import load_context

    settings = load_settings()
    async with open_store(settings) as store:
        cid = await resolve_chat(store, chat)
        history = await store.load_history(cid)
        summaries = await store.list_summaries(cid)
        facts = await store.list_facts(cid)
        pins = await store.list_pins(cid)
        context = await load_context(store, cid, settings)
    c = history.chat
    full_tokens = sum(estimate_tokens(t.transcript_line()) for t in history.full_history)
    assistant_tokens = sum(estimate_tokens(t.transcript_line()) for t in history.assistant_history)
    data = {
        "chat": {
            "id": c.id,
            "title": c.title,
            "created_at": iso(c.created_at),
            "last_activity_at": iso(c.last_activity_at),
            "summary_text": c.summary_text,
            "summarized_through": c.summarized_through,
        },
        "full_history": [_turn_json(t) for t in history.full_history],
        "assistant_history": [_turn_json(t) for t in history.assistant_history],
        "summaries": [
            {
                "level": int(s.level),
                "range": str(s.range),
                "text": s.text,
                "importance": s.importance,
                "updated_at": iso(s.updated_at),
            }
            for s in summaries
        ],
        "facts": [{"range": str(f.range), "lines": f.lines} for f in facts],
        "pins": [p.model_dump(mode="json") for p in pins],
        "tokens": {
            "full_history": full_tokens,
            "assistant_history": assistant_tokens,
            "context": context.total_tokens,
            "budget": context.budget,
            "sections": context.section_tokens(),
        },
        "dropped": [d.__dict__ for d in context.dropped],
        # what the model gets, each item with the turn(s) it comes from
        "context": [
            {"section": i.section, "text": i.text, "source": i.source}
            for items in context.sections.values()
            for i in items
            if i.section != "tail"
        ],
    }
    if as_json:
        emit_json(data, "show")
        return
    out.print(f"[bold]{escape(c.display_title)}[/bold]  {c.id}")
    out.print(f"created {when(c.created_at)}, last activity {when(c.last_activity_at)}")
    out.print(
        f"full history: {len(history.full_history)} turns, {full_tokens} tokens | "
        f"assistant history: {len(history.assistant_history)} turns, {assistant_tokens} tokens | "
        f"context: {context.total_tokens}/{context.budget} tokens"
    )
    if c.summary_text:
        out.print("\n[bold]Description[/bold] (what search matches)")
        out.print(c.summary_text, markup=False)
    if c.rolling_summary:
        out.print(f"\n[bold]Rolling summary[/bold] (turns 1-{c.summarized_through})")
        out.print(c.rolling_summary, markup=False)
    for s in summaries:
        kind = "Chunk" if s.level == 0 else "Meta"
        rated = f" (importance {s.importance:g})" if s.importance is not None else ""
        out.print(f"\n[bold]{kind} summary {s.range}[/bold]{rated}")
        out.print(s.text, markup=False)
    for f in facts:
        if f.lines:
            out.print(f"\n[bold]Facts {f.range}[/bold]")
            out.print(f.text, markup=False)
    if pins:
        out.print("\n[bold]Pins[/bold]")
        for p in pins:
            source = f" (from turn {p.source_seq})" if p.source_seq is not None else ""
            out.print(f"[{p.importance:g}] ({p.pin_type}) {p.content}{source}", markup=False)
    if context.sections["important"]:
        out.print("\n[bold]Important earlier turns in the context[/bold]")
        for item in context.sections["important"]:
            out.print(item.line, markup=False)
    if turns:
        out.print(f"\n[bold]Latest {min(turns, len(history.full_history))} turns[/bold]")
        for t in history.full_history[-turns:]:
            mark = " (interrupted)" if t.interrupted else ""
            out.print(f"{t.seq:>5} {t.transcript_line()}{mark}", markup=False)
            for s in t.sources:
                out.print(f"      source: {s.title} {s.uri}", markup=False)
    for d in context.dropped:
        out.print(f"[dim]context dropped {d.section} {d.label}: {d.tokens} tokens, {d.reason}[/dim]")


# -- search -----------------------------------------------------------------------------------


async def _search_in_daemon(settings: Settings, request: str, limit: int) -> SearchResult | None:
    """The running daemon's answer (its embedder and index are loaded), or None when no daemon
    can answer: then the command searches the store itself."""
    from parla.records.search_result import SearchResult

    from ..control import send_command
    from ..errors import ControlError

    try:
        answer = await send_command(
            settings.control_socket, "search", timeout=settings.search_embed_timeout_s + 10, query=request, limit=limit
        )
    except ControlError:  # none runs, or one that cannot search (an older daemon, still starting)
        return None
    return SearchResult.model_validate(answer["search"])


@command
async def search(
    request: str = typer.Argument(..., help='What you would say, e.g. "the chat about the Japan trip".'),
    limit: int = typer.Option(5, min=1, max=50, help="How many candidates to show."),
    as_json: bool = typer.Option(False, "--json", help="Print as JSON."),
) -> None:
    """Find the chat a spoken request means: ranked chats with scores and the decision."""
    if not request.strip():  # said before the memory (and its embedder) is loaded for nothing
        from parla.memory.errors import EmptyRequest

        raise EmptyRequest()
    settings = load_settings()
    result = await _search_in_daemon(settings, request, limit)
    if result is None:
        async with open_memory(settings) as mem:
            result = await mem.search.search(request, limit=limit)
    if as_json:
        emit_json(result.model_dump(mode="json"), "search")
        return
    verdict = {
        "switch": f"switch to {result.candidates[0].title!r}" if result.candidates else "",
        "ambiguous": "several chats fit: ask which one",
        "none": "no chat matches well enough",
    }[result.decision]
    out.print(f"Decision: [bold]{result.decision}[/bold] ({escape(verdict)})")
    out.print(f"Why: {escape(result.reason)}")
    if not result.candidates:
        return
    # the title is what tells the chats apart: it gets the room (the figures go first), and what
    # matched goes under it, as wide as the title
    columns = [
        Column("id"),
        Column("title, and what matched", text=True, least=56),
        Column("score", justify="right"),
        Column("meaning", drop=2, justify="right"),
        Column("words", drop=3, justify="right"),
        Column("date", drop=4, justify="right"),
        Column("last activity", drop=1),
    ]
    rows: list[list[Cell]] = []
    for c in result.candidates:
        held = f" (words: {', '.join(c.matched_words)})" if c.matched_words else ""
        matched = f"{c.matched_where}{held}: {' '.join(c.matched_text.split())}"
        rows.append(
            [
                c.chat_id[:8],
                (c.title or "(untitled)", matched),
                f"{c.score:.3f}",
                f"{c.similarity:.3f}",
                f"{c.words:.3f}",
                f"+{c.date:.2f}" if c.date else "",
                when(c.last_activity_at),
            ]
        )
    out.print(fitted(columns, rows, out.width))


# -- stats ------------------------------------------------------------------------------------


@command
async def stats(
    chat: str | None = typer.Option(
        None, "--chat", help="One chat's figures: its id, id prefix (4+ characters) or exact title."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print as JSON."),
) -> None:
    """Totals of what the memory holds, or of one chat (--chat)."""
    from ..stores import backend

    settings = load_settings()
    async with open_store(settings) as store:
        cid = await resolve_chat(store, chat) if chat else None
        s = await store.stats(cid)
    kept = backend(settings)
    where: dict[str, str | None] = {kept.location_key: kept.location(settings)}
    data = {"store": settings.store, **where, **({"chat": cid} if cid else {}), **s.model_dump(mode="json")}
    if kept.size is not None and cid is None:
        data["store_size"] = kept.size(settings).model_dump(mode="json")
    if as_json:
        emit_json(data, "stats")
        return
    # where the store is, on a line of its own: a long path is shown whole (a table cell cut it)
    out.print(f"Store: {kept.describe(settings)}" + (f"; chat {cid}" if cid else ""), markup=False)
    table = Table("", "", show_header=False)
    table.columns[1].overflow = "fold"  # a long figure or problem is shown whole, never cut
    for key, value in _flat(data).items():
        if key not in ("store", kept.location_key, "chat"):
            table.add_row(key.replace("_", " "), "-" if value is None else escape(str(value)))
    out.print(table)


def _flat(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested figures as rows of their own ("store size: parts: turns"); byte counts in MB."""
    rows: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            rows.update(_flat(value, f"{name}: "))
        elif prefix.startswith("store_size") and isinstance(value, int) and name != "store_size: turns":
            rows[name] = f"{value / 2**20:.2f} MB"
        else:
            rows[name] = value
    return rows


@command
async def rm(
    chats: list[str] = typer.Argument(..., help="Chats to delete: id, id start (4+ characters) or exact title."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Delete without asking."),
) -> None:
    """Delete chats with everything in them (turns, summaries, facts, pins). Asks first."""
    settings = load_settings()
    async with open_memory(settings) as mem:
        ids = list(dict.fromkeys([await resolve_chat(mem.store, ref) for ref in chats]))
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
                out.print("Nothing deleted.")  # the user's answer, not an error
                return
        queued = 0
        for c in found:
            try:
                await mem.store.delete_chat(c.id)
            except WriteQueued:  # deleted on this device; the remote store takes it when it answers
                queued += 1
    waiting = f" ({queued} wait{'s' * (queued == 1)} for the store, which did not answer)" if queued else ""
    out.print(f"Deleted {len(found)} chat{'s' if len(found) > 1 else ''}{waiting}.")


@command
async def rename(
    chat: str = typer.Argument(..., help="Chat id, id start or exact title."),
    title: str = typer.Argument(..., help="The new title (kept: summaries never replace a title you gave)."),
) -> None:
    """Give a chat a title of your own."""
    from parla.memory.retrieval.turn_windows import rename_chat

    async with open_memory(load_settings()) as mem:
        renamed = await rename_chat(mem.store, mem.embedder, await resolve_chat(mem.store, chat), title)
    out.print(f"Renamed {renamed.id[:8]} to {escape(renamed.display_title)}.")


@command
async def forget(
    chat: str = typer.Argument(..., help="Chat id, id start or exact title."),
    what: str = typer.Argument(..., help="The pin or fact to forget: its text, or enough of it to be the only match."),
    item: int | None = typer.Option(None, "--item", min=1, help="Which of several matches to forget, by its number."),
) -> None:
    """Take a pin or a fact out of a chat's memory (it no longer reaches the model or search);
    `parla memory forgotten` lists what was forgotten and `parla memory restore` brings it back.
    When a pin and a fact line hold the same text, both are forgotten."""
    from parla.memory.forgetting import memory_items, set_forgotten

    wanted = what.strip().casefold()
    if not wanted:
        raise fail("say what to forget")
    async with open_memory(load_settings()) as mem:
        items = await memory_items(mem.store, await resolve_chat(mem.store, chat))
        exact = [i for i in items if i.content.casefold() == wanted]
        matches = exact or [i for i in items if wanted in i.content.casefold()]
        if not matches:
            raise fail(f"no pin or fact of this chat contains {what!r}; `parla show {chat}` lists them")
        if item is not None:
            if item > len(matches):
                raise fail(f"{what!r} matches {len(matches)} items: --item goes from 1 to {len(matches)}")
            matches = [matches[item - 1]]
        # a pin and a fact line that hold the same sentence are the same fact: both go
        elif len({i.content.casefold() for i in matches}) > 1:
            names = "; ".join(f"{n}. [{i.kind}] {i.content}" for n, i in enumerate(matches, start=1))
            raise fail(f"{what!r} matches {len(matches)} items: {names}; give more of the text or --item N")
        for found in matches:
            await set_forgotten(mem.store, mem.embedder, found, forgotten=True)
    kinds = " and the ".join(dict.fromkeys(i.kind for i in matches))
    out.print(f"Forgot the {kinds}: {escape(matches[0].content)}")


COMMANDS = {
    "rename": rename,
    "export": export,
    "forget": forget,
    "rm": rm,
    "import": import_chats,
    "chats": list_chats,
    "show": show,
    "search": search,
    "stats": stats,
}
PANEL = CHATS
