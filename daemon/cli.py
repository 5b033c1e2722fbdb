"""The `parla` command line. Commands that only need the memory work without the daemon.

Output for people goes through rich; `--json` prints one stable JSON document on stdout
(documented in the README) and progress goes to stderr. Any failure exits non-zero with one
line on stderr saying what went wrong and what to do.
"""

from __future__ import annotations

import contextlib
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from daemon import cli_daemon, cli_setup, cli_supabase, cli_voice
from daemon.cli_support import (
    command,
    emit_json,
    err,
    iso,
    load_settings,
    out,
    progress_bar,
    resolve_chat,
    summarise,
    when,
)
from daemon.logs import redact_output
from daemon.memory_services import open_memory
from daemon.settings import Settings
from memory.compaction import RangeError
from memory.context import load_context
from memory.forgetting import memory_items, set_forgotten
from memory.importer import ImportChat, ImportLineError, ImportResult, decode_line, id_scope, import_chat, parse_line
from memory.summary import MessageRange
from memory.tokens import estimate_tokens

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Parla: a voice assistant that remembers.")
app.command("converse")(cli_voice.converse)
for _name, _fn in cli_daemon.COMMANDS.items():
    app.command(_name)(_fn)
app.command("doctor")(cli_setup.doctor)
app.add_typer(cli_setup.service_app, name="service")
app.command("login")(cli_supabase.login)
app.command("logout")(cli_supabase.logout)
app.command("sync")(cli_supabase.sync)
app.add_typer(cli_supabase.db_app, name="db")
memory_app = typer.Typer(
    no_args_is_help=True,
    help="Maintain the memory: regenerate summaries, rebuild embeddings, restore what was forgotten.",
)
app.add_typer(memory_app, name="memory")


def _store_name(settings: Settings) -> str:
    return f"Supabase {settings.supabase_url}" if settings.store == "supabase" else str(settings.store_path)


# -- import -----------------------------------------------------------------------------------

IMPORT_HELP = """Import chats from a JSONL file (one chat per line, UTF-8), or from stdin with `-`,
then summarise, extract facts and embed them.

\b
A line is Parla's shape:
  {"id": "trip", "title": "Japan", "turns": [{"role": "user", "text": "..."}, {"role": "model", "text": "..."}]}
or OpenAI/ChatGPT's:
  {"messages": [{"role": "user", "content": "..."}, {"role": "assistant", "content": "..."}]}

\b
Roles user, model and assistant are imported; system and tool messages are skipped (and counted).
Importing again adds only new chats and the turns a chat gained; a chat whose turns were edited
is reported and left as stored unless --replace is given. A bad line is skipped with its number
and reason; when every line is skipped the command fails."""


def _read_jsonl(source: str) -> tuple[list[tuple[int, ImportChat]], list[ImportLineError]]:
    chats, errors = [], []
    with contextlib.ExitStack() as stack:
        stream = sys.stdin.buffer if source == "-" else stack.enter_context(Path(source).open("rb"))
        for line_no, raw in enumerate(stream, start=1):
            try:
                line = decode_line(line_no, raw)
                if line.strip():
                    chats.append((line_no, parse_line(line_no, line)))
            except ImportLineError as e:
                errors.append(e)
    return chats, errors


@app.command("import", help=IMPORT_HELP)
@command
async def import_chats(
    file: str = typer.Argument(..., help="JSONL file, one chat per line; - reads stdin."),
    replace: bool = typer.Option(
        False,
        "--replace",
        help="Replace stored chats whose turns differ from the file's (their summaries and pins go).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the outcome as JSON."),
) -> None:
    settings = load_settings()
    if file != "-" and not Path(file).is_file():
        raise ValueError(f"no file {file!r} to import (use - to read stdin)")
    chats, errors = _read_jsonl(file)
    for e in errors:
        err.print(f"parla: skipped {e}", markup=False)
    if not chats:
        source = "stdin" if file == "-" else file
        raise ValueError(
            f"nothing imported: {'every line of ' + source + ' was skipped' if errors else source + ' holds no chat'}"
        )
    results: list[tuple[int, ImportResult]] = []
    async with open_memory(settings) as mem:
        scope = await id_scope(mem.store)
        with progress_bar() as progress:
            storing = progress.add_task("storing chats", total=len(chats))
            for line_no, chat in chats:
                # A turn must fit one bounded summarising step with room for the turns around it.
                result = await import_chat(
                    mem.store,
                    chat,
                    scope=scope,
                    replace=replace,
                    max_turn_tokens=settings.chunk_summarize_threshold // 2,
                )
                results.append((line_no, result))
                progress.advance(storing)
            # unchanged chats too: a run that could not summarise them is finished by the next one
            failed = await summarise(
                mem, [r.chat_id for _, r in results], progress, "run the same import again to retry"
            )
    count = Counter(r.outcome for _, r in results)
    report = {
        "imported": count["imported"],
        "added_to": count["added"],
        "replaced": count["replaced"],
        "unchanged": count["unchanged"],
        "turns_added": sum(r.turns_added for _, r in results),
        "differs": [
            {"line": n, "chat_id": r.chat_id, "detail": r.detail} for n, r in results if r.outcome == "differs"
        ],
        "notes": [{"line": n, "note": note} for n, r in results for note in r.notes],
        "skipped": [{"line": e.line_no, "reason": e.reason} for e in errors],
        "not_summarised": failed,
    }
    for n, r in results:
        for note in r.notes:
            err.print(f"parla: line {n}: {note}", markup=False)
        if r.outcome == "differs":
            how = "" if replace else "; `parla import --replace` replaces it with the file's version"
            err.print(f"parla: line {n}: chat {r.chat_id[:8]} not changed: {r.detail}{how}", markup=False)
    if as_json:
        emit_json(report)
        return
    out.print(
        f"Imported {report['imported']} chats ({report['turns_added']} turns in all); "
        f"{report['added_to']} gained turns; {report['replaced']} replaced; {report['unchanged']} already there; "
        f"{len(report['differs'])} differ; {len(errors)} lines skipped. Store: {_store_name(settings)}"
    )


# -- chats, show ------------------------------------------------------------------------------


@app.command("chats")
@command
async def list_chats(
    limit: int = typer.Option(50, min=1, help="How many, most recent first."),
    as_json: bool = typer.Option(False, "--json", help="Print as JSON."),
) -> None:
    """List chats: title, last activity, turn counts."""
    async with open_memory(load_settings()) as mem:
        chats = await mem.store.list_chats(limit)
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
        emit_json(rows)
        return
    if not rows:
        out.print("No chats yet. Import some with `parla import FILE.jsonl`.")
        return
    table = Table("id", "title", "last activity", "turns", "model sees")
    for c, row in zip(chats, rows, strict=True):
        table.add_row(
            c.id[:8], escape(c.display_title), when(c.last_activity_at), str(c.turn_count), str(row["assistant_turns"])
        )
    out.print(table)


def _turn_json(t: Any) -> dict[str, Any]:
    return {
        **t.seed_shape(),
        "id": t.id,
        "seq": t.seq,
        "created_at": iso(t.created_at),
        "interrupted": t.interrupted,
        "source": t.source,
        "model_variant": t.model_variant,
    }


@app.command("show")
@command
async def show(
    chat: str = typer.Argument(
        ..., help="Chat id, id prefix (4+ characters), exact title, or the id it was imported with."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print as JSON."),
    turns: int = typer.Option(10, min=0, help="How many of the latest turns to print (text output)."),
) -> None:
    """Show one chat: full vs assistant history, summaries, facts, pins, token counts."""
    settings = load_settings()
    async with open_memory(settings) as mem:
        cid = await resolve_chat(mem, chat)
        history = await mem.store.load_history(cid)
        summaries = await mem.store.list_summaries(cid)
        facts = await mem.store.list_facts(cid)
        pins = await mem.store.list_pins(cid)
        context = await load_context(mem.store, cid, settings)
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
            {"level": int(s.level), "range": str(s.range), "text": s.text, "updated_at": iso(s.updated_at)}
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
    }
    if as_json:
        emit_json(data)
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
        out.print(f"\n[bold]{kind} summary {s.range}[/bold]")
        out.print(s.text, markup=False)
    for f in facts:
        if f.lines:
            out.print(f"\n[bold]Facts {f.range}[/bold]")
            out.print(f.text, markup=False)
    if pins:
        out.print("\n[bold]Pins[/bold]")
        for p in pins:
            out.print(f"[{p.importance:g}] ({p.pin_type}) {p.content}", markup=False)
    if turns:
        out.print(f"\n[bold]Latest {min(turns, len(history.full_history))} turns[/bold]")
        for t in history.full_history[-turns:]:
            mark = " (interrupted)" if t.interrupted else ""
            out.print(f"{t.seq:>5} {t.transcript_line()}{mark}", markup=False)
    for d in context.dropped:
        out.print(f"[dim]context dropped {d.section} {d.label}: {d.tokens} tokens, {d.reason}[/dim]")


# -- search -----------------------------------------------------------------------------------


@app.command("search")
@command
async def search(
    request: str = typer.Argument(..., help='What you would say, e.g. "the chat about the Japan trip".'),
    limit: int = typer.Option(5, min=1, max=50, help="How many candidates to show."),
    as_json: bool = typer.Option(False, "--json", help="Print as JSON."),
) -> None:
    """Find the chat a spoken request means: ranked chats with scores and the decision."""
    async with open_memory(load_settings()) as mem:
        result = await mem.search.search(request, limit=limit)
    if as_json:
        emit_json(result.model_dump(mode="json"))
        return
    verdict = {
        "switch": f"switch to {result.candidates[0].title!r}" if result.candidates else "",
        "ambiguous": "several chats fit: ask which one",
        "none": "no chat matches well enough",
    }[result.decision]
    out.print(f"Decision: [bold]{result.decision}[/bold] ({escape(verdict)})")
    if not result.candidates:
        return
    table = Table("id", "title", "score", "similarity", "last activity", "matched")
    for c in result.candidates:
        snippet = c.matched_text.replace("\n", " ")
        table.add_row(
            c.chat_id[:8],
            escape(c.title or "(untitled)"),
            f"{c.score:.3f}",
            f"{c.similarity:.3f}",
            when(c.last_activity_at),
            escape(f"{c.matched_kind}: {snippet[:60]}"),
        )
    out.print(table)


# -- stats ------------------------------------------------------------------------------------


@app.command("stats")
@command
async def stats(as_json: bool = typer.Option(False, "--json", help="Print as JSON.")) -> None:
    """Totals of what the memory holds."""
    settings = load_settings()
    async with open_memory(settings) as mem:
        s = await mem.store.stats()
    where = {"url": settings.supabase_url} if settings.store == "supabase" else {"path": str(settings.store_path)}
    data = {"store": settings.store, **where, **s.model_dump(mode="json")}
    if as_json:
        emit_json(data)
        return
    table = Table("", "", show_header=False)
    for key, value in data.items():
        table.add_row(key.replace("_", " "), "-" if value is None else str(value))
    out.print(table)


# -- memory maintenance -----------------------------------------------------------------------


def _parse_range(text: str) -> MessageRange:
    start, sep, end = text.partition("-")
    if not sep or not start.strip().isdigit() or not end.strip().isdigit():
        raise RangeError(f"--range takes two message numbers like 11-20, not {text!r}")
    return MessageRange(start=int(start), end=int(end))


@memory_app.command("regenerate")
@command
async def regenerate(
    chat: str = typer.Argument(..., help="Chat id, id prefix or exact title."),
    range_: str | None = typer.Option(None, "--range", help="Whole chunks to redo, e.g. 11-20 (default: all)."),
) -> None:
    """Redo the chunk summaries and facts of a range, and the meta summaries that cover it."""
    rng = _parse_range(range_) if range_ else None
    async with open_memory(load_settings()) as mem:
        cid = await resolve_chat(mem, chat)
        report = await mem.compactor.regenerate(cid, rng)
    out.print(
        f"Regenerated {report.chunk_summaries} chunk summaries, {report.fact_blocks} fact blocks and "
        f"{report.meta_summaries} meta summaries in {report.duration_ms:.0f} ms."
    )


@memory_app.command("reembed")
@command
async def reembed(batch: int = typer.Option(64, min=1, help="Texts per embedding call.")) -> None:
    """Rebuild every embedding with the configured embedder (after changing PARLA_EMBEDDER)."""
    async with open_memory(load_settings()) as mem:
        texts = await mem.store.embedded_texts()
        vectors = []
        with progress_bar() as progress:
            task = progress.add_task(f"embedding with {mem.embedder.name}", total=len(texts))
            for start in range(0, len(texts), batch):
                chunk = texts[start : start + batch]
                vectors.extend(await mem.embedder.embed([t.text for t in chunk], "document"))
                progress.advance(task, len(chunk))
        await mem.store.replace_embeddings([(t.ref, v) for t, v in zip(texts, vectors, strict=True)], mem.embedder.name)
    out.print(f"Re-embedded {len(texts)} texts with {mem.embedder.name}.")


@memory_app.command("forgotten")
@command
async def forgotten(
    chat: str = typer.Argument(..., help="Chat id, id prefix or exact title."),
    as_json: bool = typer.Option(False, "--json", help="Print as JSON."),
) -> None:
    """The pins and facts of a chat that were forgotten, numbered for `parla memory restore`."""
    async with open_memory(load_settings()) as mem:
        items = await memory_items(mem.store, await resolve_chat(mem, chat), forgotten=True)
    if as_json:
        emit_json(
            [
                {"number": n, "kind": i.kind, "text": i.content, "forgotten_at": iso(i.forgotten_at)}
                for n, i in enumerate(items, start=1)
            ]
        )
        return
    if not items:
        out.print("Nothing was forgotten in this chat.")
    for n, i in enumerate(items, start=1):
        moment = when(i.forgotten_at) if i.forgotten_at else "-"
        out.print(f"{n:>3}. [{i.kind}] {escape(i.content)}  [dim](forgotten {moment})[/dim]")


@memory_app.command("restore")
@command
async def restore(
    chat: str = typer.Argument(..., help="Chat id, id prefix or exact title."),
    number: int = typer.Argument(..., min=1, help="The item's number in `parla memory forgotten CHAT`."),
) -> None:
    """Bring a forgotten pin or fact back into the chat's memory."""
    async with open_memory(load_settings()) as mem:
        items = await memory_items(mem.store, await resolve_chat(mem, chat), forgotten=True)
        if number > len(items):
            raise ValueError(
                f"the chat has {len(items)} forgotten items, not {number}: `parla memory forgotten {chat}` lists them"
            )
        item = items[number - 1]
        await set_forgotten(mem.store, mem.embedder, item, forgotten=False)
    out.print(f"Restored the {item.kind}: {escape(item.content)}")


def main() -> None:
    redact_output()  # no secret in anything printed, tracebacks included
    app()
