"""The `parla` command line. Commands that only need the memory work without the daemon.

Output for people goes through rich; `--json` prints one stable JSON document on stdout
(documented in the README) and progress goes to stderr. Any failure exits non-zero with one
line on stderr saying what went wrong and what to do.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections import Counter
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.markup import escape
from rich.table import Table

from daemon import cli_chats, cli_daemon, cli_setup, cli_supabase, cli_voice
from daemon.cli_support import (
    command,
    emit_json,
    err,
    iso,
    load_settings,
    open_memory,
    options,
    out,
    progress_bar,
    resolve_chat,
    store_and_summarise,
    when,
)
from daemon.logs import redact_output
from daemon.settings import Settings

if TYPE_CHECKING:
    from memory.errors import ImportLineError
    from memory.importer import ImportChat, ImportResult
    from memory.turn import MessageRange

# Commands that need the memory, the SDKs or the audio stack import them in their bodies: `parla
# status`, `--help` or `config path` start in a fraction of the time (bench/cli_startup.py).

# The help groups commands by what they work on.
TALK, CHATS, MEMORY, SETUP = "Talk to Parla", "Chats", "Memory", "Setup"

app = typer.Typer(
    no_args_is_help=True,
    help="Parla: a voice assistant that remembers.",
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version() -> str:
    try:
        return version("parla")
    except PackageNotFoundError:
        return "unknown (not installed)"


def _show_version(value: bool) -> None:
    if value:
        out.print(f"parla {_version()}", markup=False)
        raise typer.Exit()


@app.callback()
def _options(
    verbose: int = typer.Option(
        0, "--verbose", "-v", count=True, help="More log output on stderr: -v info, -vv debug."
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Errors only: no progress bars, warnings or log lines."),
    _version_flag: bool = typer.Option(
        False, "--version", callback=_show_version, is_eager=True, help="Print Parla's version and exit."
    ),
) -> None:
    # The flags override PARLA_LOG_LEVEL for this command (`parla config show` says so).
    if verbose or quiet:
        options.log_level = "ERROR" if quiet else ("INFO" if verbose == 1 else "DEBUG")
    options.quiet = quiet


for _name, _fn in cli_daemon.COMMANDS.items():
    app.command(_name, rich_help_panel=TALK)(_fn)
app.command("converse", rich_help_panel=TALK)(cli_voice.converse)
app.command("devices", rich_help_panel=SETUP)(cli_setup.devices)
app.command("doctor", rich_help_panel=SETUP)(cli_setup.doctor)
app.add_typer(cli_setup.config_app, name="config", rich_help_panel=SETUP)
app.add_typer(cli_setup.service_app, name="service", rich_help_panel=SETUP)
app.command("login", rich_help_panel=SETUP)(cli_supabase.login)
app.command("logout", rich_help_panel=SETUP)(cli_supabase.logout)
app.command("sync", rich_help_panel=SETUP)(cli_supabase.sync)
app.add_typer(cli_supabase.db_app, name="db", rich_help_panel=SETUP)
for _name, _fn in cli_chats.COMMANDS.items():
    app.command(_name, rich_help_panel=CHATS)(_fn)
memory_app = typer.Typer(
    no_args_is_help=True,
    help="Maintain the memory: regenerate summaries, rebuild embeddings, restore what was forgotten.",
)
app.add_typer(memory_app, name="memory", rich_help_panel=MEMORY)


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
    from memory.errors import ImportLineError
    from memory.importer import decode_line, parse_line

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


@app.command("import", help=IMPORT_HELP, rich_help_panel=CHATS)
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
    from memory.importer import id_scope, import_chat

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
    async with open_memory(settings) as mem:
        scope = await id_scope(mem.store)

        async def store_one(item: tuple[int, ImportChat]) -> tuple[tuple[int, ImportResult], str]:
            line_no, chat = item
            # A turn must fit one bounded summarising step with room for the turns around it.
            result = await import_chat(
                mem.store, chat, scope=scope, replace=replace, max_turn_tokens=settings.chunk_summarize_threshold // 2
            )
            # unchanged chats too: a run that could not summarise them is finished by the next one
            return (line_no, result), result.chat_id

        with progress_bar() as progress:
            results, failed = await store_and_summarise(
                mem, chats, store_one, progress, "run the same import again to retry"
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


@app.command("chats", rich_help_panel=CHATS)
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
        **t.wire_shape(),
        "id": t.id,
        "seq": t.seq,
        "created_at": iso(t.created_at),
        "interrupted": t.interrupted,
        "source": t.source,
        "model_variant": t.model_variant,
    }


@app.command("show", rich_help_panel=CHATS)
@command
async def show(
    chat: str = typer.Argument(
        ..., help="Chat id, id prefix (4+ characters), exact title, or the id it was imported with."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print as JSON."),
    turns: int = typer.Option(10, min=0, help="How many of the latest turns to print (text output)."),
) -> None:
    """Show one chat: full vs assistant history, summaries, facts, pins, token counts."""
    from memory.context import load_context
    from memory.tokens import estimate_tokens

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


@app.command("search", rich_help_panel=CHATS)
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


@app.command("stats", rich_help_panel=CHATS)
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
        table.add_row(key.replace("_", " "), "-" if value is None else escape(str(value)))
    out.print(table)


# -- memory maintenance -----------------------------------------------------------------------


def _parse_range(text: str) -> MessageRange:
    from memory.errors import RangeError
    from memory.turn import MessageRange

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
    from memory.reembed import reembed as reembed_store

    async with open_memory(load_settings()) as mem:
        with progress_bar() as progress:
            task = progress.add_task(f"embedding with {mem.embedder.name}", total=None)
            count = await reembed_store(
                mem.store, mem.embedder, batch, lambda done, total: progress.update(task, completed=done, total=total)
            )
    out.print(f"Re-embedded {count} texts with {mem.embedder.name}.")


def _print_forgotten(items: list[Any]) -> None:
    if not items:
        out.print("Nothing is forgotten in this chat.")
    for n, i in enumerate(items, start=1):
        moment = when(i.forgotten_at) if i.forgotten_at else "-"
        out.print(f"{n:>3}. {escape(f'[{i.kind}]')} {escape(i.content)}  [dim](forgotten {moment})[/dim]")


@memory_app.command("forgotten")
@command
async def forgotten(
    chat: str = typer.Argument(..., help="Chat id, id prefix or exact title."),
    as_json: bool = typer.Option(False, "--json", help="Print as JSON."),
) -> None:
    """The pins and facts of a chat that were forgotten, numbered for `parla memory restore`."""
    from memory.forgetting import memory_items

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
    _print_forgotten(items)


@memory_app.command("restore")
@command
async def restore(
    chat: str = typer.Argument(..., help="Chat id, id prefix or exact title."),
    numbers: list[int] = typer.Argument(..., min=1, help="Item numbers as `parla memory forgotten CHAT` lists them."),
) -> None:
    """Bring forgotten pins or facts back into the chat's memory. Several numbers at once all refer
    to the list as printed; afterwards the remaining items are listed with their new numbers."""
    from memory.forgetting import memory_items, set_forgotten

    async with open_memory(load_settings()) as mem:
        cid = await resolve_chat(mem, chat)
        items = await memory_items(mem.store, cid, forgotten=True)
        if wrong := [n for n in numbers if n > len(items)]:
            raise ValueError(
                f"the chat has {len(items)} forgotten items, not {wrong[0]}: `parla memory forgotten {chat}` lists them"
            )
        chosen = [items[n - 1] for n in dict.fromkeys(numbers)]
        for item in chosen:
            await set_forgotten(mem.store, mem.embedder, item, forgotten=False)
        remaining = await memory_items(mem.store, cid, forgotten=True)
    for item in chosen:
        out.print(f"Restored the {item.kind}: {escape(item.content)}")
    if remaining:
        out.print("Still forgotten, numbered anew:")
        _print_forgotten(remaining)


class _Never(Exception):
    """Stands in for an exception class the installed click does not have."""


def _click_errors() -> tuple[type[Exception], type[Exception], type[Exception]]:
    # typer raises click's exceptions, or (newer typer) those of the copy of click it ships
    bases = {c.__name__: c for c in typer.BadParameter.__mro__}
    usage = bases["UsageError"]
    return usage, bases["ClickException"], getattr(sys.modules[usage.__module__], "NoArgsIsHelpError", _Never)


_USAGE_ERROR, _CLICK_EXCEPTION, _NO_ARGS_IS_HELP = _click_errors()


def main() -> None:
    """The `parla` script: click's usage errors become one line like every other failure, and a
    reader that goes away (`parla chats | head`) ends the command quietly; no secret appears in
    anything printed, tracebacks included."""
    redact_output()
    try:
        code = app(prog_name="parla", standalone_mode=False)
    except _NO_ARGS_IS_HELP as e:  # `parla` or `parla memory` alone: the help is the answer
        out.print(e.format_message(), markup=False)
        code = 0
    except _USAGE_ERROR as e:
        where = f"; `{e.ctx.command_path} --help` shows the usage" if e.ctx else ""
        err.print(f"parla: error: {e.format_message().rstrip('.')}{where}", markup=False)
        code = e.exit_code
    except _CLICK_EXCEPTION as e:
        err.print(f"parla: error: {e.format_message()}", markup=False)
        code = e.exit_code
    except typer.Abort:
        err.print("parla: interrupted", markup=False)
        code = 130
    except BrokenPipeError:
        # Python would complain again when it flushes stdout at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 1
    sys.exit(code if isinstance(code, int) else 0)
