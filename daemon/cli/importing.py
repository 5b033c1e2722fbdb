"""`parla import`: chats from another assistant's export or a JSONL file, stored at once and
searchable at once; their summaries made here (a small import, or any with --offline), or by the
daemon's background queue: for a big import with Gemini after saying what it costs and asking, for
a big one with the offline summarizer at once (summarising in the foreground was most of a big
import's time: the offline models read each fact's dates)."""

from __future__ import annotations

import itertools
import re
import sys
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from ..errors import CommandFailed
from ..settings import Settings
from .support import (
    command,
    emit_json,
    err,
    load_settings,
    open_memory,
    out,
    progress_bar,
    store_with_progress,
    summarise_now,
    tell_daemon,
)

if TYPE_CHECKING:
    from rich.progress import Progress

    from parla.memory.compaction.summary_queue import SummaryCost
    from parla.memory.errors import ImportLineError
    from parla.memory.imports.importer import ImportChat, ImportResult

    from ..memory_services import MemoryServices

_RETRY = "run the same import again to retry"
_NOTES_ONE_BY_ONE = 10  # what was left out is said chat by chat up to this many notes, else summed


def store_name(settings: Settings) -> str:
    from ..stores import backend

    return backend(settings).describe(settings)


@command
async def import_chats(
    file: str = typer.Argument(..., help="An export (.zip or .json) or a JSONL file; - reads stdin."),
    replace: bool = typer.Option(
        False,
        "--replace",
        help="Replace stored chats whose turns differ from the file's (their summaries and pins go).",
    ),
    yes: bool = typer.Option(
        False, "--yes", "-y", help="Queue a big import's Gemini summaries without asking what they cost."
    ),
    offline: bool = typer.Option(
        False, "--offline", help="Summarise with the offline models, here and now: no Gemini calls for summaries."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the outcome as JSON."),
) -> None:
    """Import chats from ChatGPT's, Claude's or Open WebUI's export, or from a JSONL file (one chat
    per line, UTF-8), or from stdin with `-`; then summarise, extract facts and embed them.

    \b
    The format is told from the content and named. Exports:
      ChatGPT: the .zip it mails, or its conversations.json
      Claude: the .zip it mails, or its conversations.json
      Open WebUI: a chat export (.json)
    A JSONL line is Parla's shape:
      {"id": "trip", "title": "Japan", "turns": [{"role": "user", "text": "..."}, {"role": "model", "text": "..."}]}
    or OpenAI's chat messages:
      {"messages": [{"role": "user", "content": "..."}, {"role": "assistant", "content": "..."}]}

    Roles user, model and assistant are imported; system and tool messages are skipped (and counted);
    of an export's branches only the one shown last is kept. Files are read as they are stored, so a
    big export needs little memory; after Ctrl-C or a crash, running the same import again carries on.
    Importing again adds only new chats and the turns a chat gained; a chat whose turns were edited
    is reported and left as stored unless --replace is given. A bad line or conversation is skipped
    with its number and reason; when every one is skipped the command fails.

    What was said is searchable as soon as it is stored. With Gemini summarising, when the summaries
    would take more than import_confirm_calls Gemini calls, the import says how many calls and tokens,
    asks (or takes --yes), and queues them: the daemon makes them in the background at
    summary_calls_per_minute (`parla status` shows how far). With the offline summarizer, an import of
    more than import_offline_now_turns turns queues them for the daemon at once. --offline makes them
    here with the offline models instead."""
    from parla.memory.compaction.pins_and_profile import learn_from_chat
    from parla.memory.compaction.report import CompactionReport
    from parla.memory.imports.bounds import ReadLimits
    from parla.memory.imports.importer import id_scope, import_chat
    from parla.memory.imports.reading import Export

    settings = load_settings()
    if offline:
        settings = settings.model_copy(update={"summarizer": "offline"})
    if file != "-" and not Path(file).is_file():
        raise CommandFailed(f"no file {file!r} to import (use - to read stdin)")
    errors: list[ImportLineError] = []

    def chats(entries: Iterable[tuple[int, ImportChat] | ImportLineError]) -> Iterator[tuple[int, ImportChat]]:
        for entry in entries:
            if isinstance(entry, tuple):
                yield entry
            else:
                errors.append(entry)
                err.print(f"parla: skipped {entry}", markup=False)

    with Export(file, ReadLimits.of(settings)) as export:
        entries = export.chats()
        first = next(entries, None)  # names the format before anything is stored
        if first is None:
            raise CommandFailed(f"nothing imported: {export.where} holds no chat")
        err.print(f"parla: reading {export.where}: {export.format_name}", markup=False)
        async with open_memory(settings) as mem:
            if offline:
                mem = await _offline(mem)
            scope = await id_scope(mem.store)
            # what the user says about themselves, read from each chat's turns as it is stored: the
            # summaries may wait for the queue, the profile does not
            learned = CompactionReport("import")

            async def store_one(item: tuple[int, ImportChat]) -> tuple[tuple[int, ImportResult], str]:
                number, chat = item
                # A turn must fit one bounded summarising step with room for the turns around it.
                result = await import_chat(
                    mem.store,
                    chat,
                    scope=scope,
                    replace=replace,
                    max_turn_tokens=settings.chunk_summarize_threshold // 2,
                    max_turn_chars=settings.import_max_turn_chars,
                )
                if result.turns_added:
                    await learn_from_chat(mem.store, mem.settings, mem.dates, result.chat_id, learned)
                # unchanged chats too: a run that could not summarise them is finished by the next one
                return (number, result), result.chat_id

            with progress_bar() as progress:
                results, ids = await store_with_progress(
                    chats(itertools.chain([first], entries)),
                    store_one,
                    progress,
                    size=(export.size / 1e6 if export.size else None, lambda: export.read / 1e6),
                )
                summaries = await _summaries(mem, ids, progress, yes, here=offline)
    if not results:
        raise CommandFailed(f"nothing imported: every {export.what} of {export.where} was skipped")
    what = export.what
    count = Counter(r.outcome for _, r in results)
    report = {
        "format": export.format_name,
        "imported": count["imported"],
        "added_to": count["added"],
        "replaced": count["replaced"],
        "unchanged": count["unchanged"],
        "turns_added": sum(r.turns_added for _, r in results),
        "profile_entries": learned.profile_entries,
        "differs": [{what: n, "chat_id": r.chat_id, "detail": r.detail} for n, r in results if r.outcome == "differs"],
        "notes": [{what: n, "note": note} for n, r in results for note in r.notes],
        "skipped": [{what: e.line_no, "reason": e.reason} for e in errors],
        "not_summarised": summaries.pop("failed"),
        "summaries": summaries,
    }
    for line in _said_left_out(results, what):
        err.print(f"parla: {line}", markup=False)
    for n, r in results:
        if r.outcome == "differs":
            how = "" if replace else "; `parla import --replace` replaces it with the file's version"
            err.print(f"parla: {what} {n}: chat {r.chat_id[:8]} not changed: {r.detail}{how}", markup=False)
    if as_json:
        emit_json(report, "import")
        return
    out.print(
        f"Imported {report['imported']} chats ({report['turns_added']} turns in all; {export.format_name}); "
        f"{report['added_to']} gained turns; {report['replaced']} replaced; {report['unchanged']} already there; "
        f"{len(report['differs'])} differ; {len(errors)} {what}s skipped; {report['profile_entries']} new entries "
        f"in what Parla knows about you (`parla profile list`). Store: {store_name(settings)}",
        markup=False,
    )


def _said_left_out(results: list[tuple[int, ImportResult]], what: str) -> list[str]:
    """What the converters left out, for the terminal: each note with its chat when there are few;
    else each kind once, its counts summed, with how many chats it came from (a heavy user's
    export leaves something out of most conversations: thousands of lines would bury the rest)."""
    notes = [(n, note) for n, r in results for note in r.notes]
    if len(notes) <= _NOTES_ONE_BY_ONE:
        return [f"{what} {n}: {note}" for n, note in notes]
    # a kind is a note with its count taken out: (before the count, after it), or (note, None)
    kinds: dict[tuple[str, str | None], tuple[int, int]] = {}
    for _, note in notes:
        count = re.search(r"\d+", note)
        kind = (note[: count.start()], note[count.end() :]) if count else (note, None)
        total, chats = kinds.get(kind, (0, 0))
        kinds[kind] = (total + (int(count.group()) if count else 1), chats + 1)
    return [
        f"{before if after is None else f'{before}{total:,}{after}'}, from {chats:,} of {len(results):,} {what}s"
        " (`--json` lists each)"
        for (before, after), (total, chats) in kinds.items()
    ]


async def _offline(mem: MemoryServices) -> MemoryServices:
    """The memory with the offline summarizer, and the offline embedder unless the store holds
    another embedder's vectors (a store holds one embedder's: those stay the configured one's)."""
    from parla.memory.embedders.offline import OfflineEmbedder

    from ..memory_services import MemoryServices

    info = await mem.store.embedder_info()
    offline = OfflineEmbedder()
    if info is None or info == (offline.name, offline.dim):
        return MemoryServices(mem.settings.model_copy(update={"embedder": "offline"}), mem.store)
    return mem


async def _summaries(mem: MemoryServices, ids: list[str], progress: Progress, yes: bool, here: bool) -> dict[str, Any]:
    """Summarise the stored chats `ids`: here and now when asked (`here`, offline) or when the work
    is small; else in the background queue (with Gemini once the user agrees to what it costs).
    What was done, as reported."""
    if here:
        return {"by": "offline", "state": "done", "failed": await summarise_now(mem, ids, progress, _RETRY)}
    # what was said is searchable at once, whatever happens to the summaries
    waiting, cost, turns = await _index_and_cost(mem, ids, progress)
    if not mem.summarises_with_gemini:
        if turns <= mem.settings.import_offline_now_turns:
            # every chat, as before: a compaction cut short by a crash is finished by the next import
            return {"by": "offline", "state": "done", "failed": await summarise_now(mem, ids, progress, _RETRY)}
        await mem.store.queue_summaries(waiting)
        await tell_daemon(mem.settings.control_socket, "summaries")
        err.print(
            f"parla: the summaries of {len(waiting):,} chats ({turns:,} turns) are queued: what was said is searchable "
            "now; the daemon summarises them in the background with the offline models (`parla status` shows how "
            "far; start it with `parla run` or `parla service install` if it is not running). --offline makes them "
            "here instead",
            markup=False,
        )
        return {"by": "offline", "chats": len(waiting), "state": "queued", "failed": []}
    shown = {"by": mem.settings.summary_model, "chats": cost.chats, "calls": cost.calls, "tokens": cost.input_tokens}
    if cost.calls <= mem.settings.import_confirm_calls:
        return {**shown, "state": "done", "failed": await summarise_now(mem, waiting, progress, _RETRY)}
    rate = mem.settings.summary_calls_per_minute
    said = (
        f"summarising {cost.chats} chats with {mem.settings.summary_model} takes about {cost.calls:,} Gemini calls "
        f"and {cost.input_tokens:,} input tokens (about {_duration(cost.minutes_at(rate))} at {rate:g} calls a "
        "minute, summary_calls_per_minute)"
    )
    if not yes and not _agreed(said, progress):
        err.print(
            f"parla: {said}: not queued. What was said is stored and searchable now; run the import again with "
            "--yes to queue the summaries, or with --offline to make them here with the offline models",
            markup=False,
        )
        return {**shown, "state": "not queued", "failed": []}
    await mem.store.queue_summaries(waiting)
    await tell_daemon(mem.settings.control_socket, "summaries")
    err.print(
        f"parla: {said}: queued. What was said is searchable now; the daemon summarises them in the background "
        "(`parla status` shows how far; start it with `parla run` or `parla service install` if it is not running)",
        markup=False,
    )
    return {**shown, "state": "queued", "failed": []}


async def _index_and_cost(
    mem: MemoryServices, ids: list[str], progress: Progress
) -> tuple[list[str], SummaryCost, int]:
    """Index what was said in each chat (its windows and title), and the chats still waiting for
    summaries (no description yet) with their turns and what summarising them costs with Gemini
    (offline nothing: their turns are not read again)."""
    from parla.kernel.tokens import estimate_tokens
    from parla.memory.compaction.summary_queue import SummaryCost, summary_cost
    from parla.memory.errors import ModelError
    from parla.memory.retrieval.turn_windows import WindowIndexer

    # the indexer alone: the compactor would load the summarizer, which is not needed yet
    windows = WindowIndexer(mem.store, mem.embedder, mem.settings.search_window_turns)
    indexing = progress.add_task("indexing what was said", total=len(ids))
    waiting, cost, count = [], SummaryCost(), 0
    for cid in ids:
        with suppress(ModelError):  # the embedder away: the summarising indexes it, or says why not
            await windows.index(cid)
        chat = await mem.store.get_chat(cid)
        if not chat.summary_text:
            waiting.append(cid)
            count += chat.turn_count
            if mem.summarises_with_gemini:
                turns = await mem.store.load_turns(cid)
                tokens = [estimate_tokens(t.transcript_line()) for t in turns]
                cost += summary_cost(tokens, bool(chat.title), mem.settings)
        progress.advance(indexing)
    return waiting, cost, count


def _agreed(said: str, progress: Progress) -> bool:
    if not sys.stdin.isatty():
        return False
    progress.stop()  # the question is not drawn over
    return typer.confirm(f"{said[0].upper()}{said[1:]}. Queue them?", err=True)


def _duration(minutes: float) -> str:
    if minutes < 90:
        return f"{max(1, round(minutes))} min"
    hours = minutes / 60
    return f"{hours:.1f} h" if hours < 48 else f"{hours / 24:.1f} days"
