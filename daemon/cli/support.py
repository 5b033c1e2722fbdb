"""What every `parla` command shares: the consoles, settings loading, the error wrapper, progress
bars and JSON output."""

from __future__ import annotations

import asyncio
import inspect
import logging
import sys
from collections.abc import Awaitable, Callable, Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import datetime
from functools import wraps
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import typer
from rich.console import Console
from rich.text import Text

from parla.kernel.errors import ParlaError
from parla.memory.errors import WriteQueued

from ..settings import Settings
from ..terminal_text import json_text, visible

if TYPE_CHECKING:
    from rich.progress import Progress

    from parla.memory.compaction.compactor import CompactionWorker
    from parla.memory.store.protocol import ChatRecords, ChatStore

    from ..memory_services import MemoryServices

T = TypeVar("T")
R = TypeVar("R")

log = logging.getLogger(__name__)
# Telling a running daemon to look again waits this long for its answer.
_TELL_TIMEOUT_S = 2.0


class _Console(Console):
    """Every string printed (in tables too) is shown with its control characters made visible:
    text from chats reaches these consoles everywhere. Rich's own styling is added after."""

    def render_str(self, text: str, **kwargs: Any) -> Text:
        return super().render_str(visible(text), **kwargs)


out = _Console(highlight=False, soft_wrap=True)
err = _Console(stderr=True, highlight=False, soft_wrap=True)


@dataclass
class Options:
    """The global options (`-v`, `-q`) of this invocation."""

    log_level: str | None = None  # overrides PARLA_LOG_LEVEL
    quiet: bool = False  # no progress bars, no warnings; errors still print


options = Options()

# The help groups commands by what they work on; each command module names its group as PANEL.
TALK, CHATS, MEMORY, SETUP = "Talk to Parla", "Chats", "Memory", "Setup"


def load_settings() -> Settings:
    from .. import settings_sources
    from ..logs import configure_logging

    if not options.quiet:
        for warning in settings_sources.warnings():
            err.print(f"parla: warning: {warning}", markup=False)
    settings = settings_sources.load(log_level=options.log_level)
    configure_logging(settings)
    return settings


def fail(message: str, code: int = 1) -> typer.Exit:
    """Print `parla: error: message` on stderr; raise what this returns to exit with `code`."""
    err.print(f"parla: error: {message}", markup=False)
    return typer.Exit(code)


def command(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Run a command (async ones in an event loop); a user error (ParlaError) becomes one line on
    stderr and exit code 1, anything else is a bug and keeps its traceback."""

    @wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            result = fn(*args, **kwargs)
            return asyncio.run(result) if inspect.iscoroutine(result) else result
        except KeyboardInterrupt:
            err.print("parla: interrupted; everything stored so far is kept", markup=False)
            raise typer.Exit(130) from None
        except BrokenPipeError:
            raise  # the reader went away (`parla chats | head`): main() exits quietly
        except WriteQueued as e:  # done on this device; the remote store takes it when it answers again
            out.print(f"Kept on this device: {e}.", markup=False)
            raise typer.Exit(0) from None
        except ParlaError as e:  # anything else is a bug: main() shows its traceback, secrets redacted
            raise fail(str(e)) from None

    return run


def group(help_text: str, commands: dict[str, Callable[..., Any]]) -> typer.Typer:
    """A command with subcommands (`parla config show`), built from its table as the app is."""
    from .help import HelpGroup, command_help, registered

    sub = typer.Typer(no_args_is_help=True, help=command_help(help_text), cls=HelpGroup)
    for name, fn in commands.items():
        sub.command(name, **registered(fn))(fn)
    return sub


def by_number_or_id(listed: Sequence[T], ref: str, candidates: Iterable[T], id_of: Callable[[T], str]) -> list[T]:
    """What `ref` names: the item numbered so in `listed` (as a list command shows it), else those
    of `candidates` whose id starts with it."""
    if ref.isdigit() and 1 <= int(ref) <= len(listed):
        return [listed[int(ref) - 1]]
    return [c for c in candidates if id_of(c).startswith(ref.strip().lower())]


def open_memory(settings: Settings) -> AbstractAsyncContextManager[MemoryServices]:
    """The memory services (daemon.memory_services.open_memory), imported when a command needs them."""
    from ..memory_services import open_memory as open_services

    return open_services(settings)


def open_store(settings: Settings) -> AbstractAsyncContextManager[ChatStore]:
    """The store alone (daemon.stores.open_store), for the commands that only read it: no model
    SDK, no embedder."""
    from ..stores import open_store as open_chats

    return open_chats(settings)


async def running_daemon_chat(socket: Path) -> str | None:
    """The chat a running daemon is in, or None when none runs."""
    from ..control import DaemonNotRunning, send_command

    try:
        status = await send_command(socket, "status", timeout=5)
    except DaemonNotRunning:
        return None
    return str(status["chat"]["id"])


async def tell_daemon(socket: Path, cmd: Literal["reminders", "summaries"]) -> None:
    """A running daemon looks again at what `cmd` names (the reminders, the summary queue) at
    once; none running finds it when it starts. A courtesy: what the command stored stands
    whatever the daemon does, so one that cannot be told (suspended, hung, busy, older than this
    command) finds the work at its next look, and the command goes on."""
    from ..control import send_command
    from ..errors import ControlError

    try:
        await send_command(socket, cmd, timeout=_TELL_TIMEOUT_S)
    except (ControlError, TimeoutError, OSError) as e:
        log.info("the daemon was not told (%s): %s", cmd, e)


async def resolve_chat(store: ChatRecords, ref: str) -> str:
    """The chat an id, the start of one, or an imported chat's own id names."""
    from parla.memory.errors import ChatNotFound, StoreError
    from parla.memory.imports.importer import find_chats_named

    chats = await find_chats_named(store, ref)
    if not chats:
        raise ChatNotFound(ref)
    if len(chats) > 1:
        names = ", ".join(f"{c.id[:8]} ({c.display_title})" for c in chats[:5])
        raise StoreError(f"{ref!r} matches {len(chats)} chats: {names}; give more of the id")
    return chats[0].id


def progress_bar() -> Progress:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=not err.is_terminal,
        disable=options.quiet,
    )


def iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def when(value: datetime) -> str:
    from parla.records.turn import local_time

    moment = local_time(value)
    return f"{moment.year:04d}-{moment:%m-%d %H:%M}"  # strftime's %Y gives year 1 as "1"


def emit_json(data: Any, command: str) -> None:
    """Print the command's `--json` document, once it is checked to be the shape the reference
    documents (daemon/cli/json_shapes.py): an undeclared field is a bug, not an output."""
    from .json_shapes import check

    check(command, data)
    sys.stdout.write(json_text(data, indent=2) + "\n")


async def store_and_summarise(
    mem: MemoryServices,
    items: Iterable[T],
    store_one: Callable[[T], Awaitable[tuple[R, str | None]]],
    progress: Progress,
    retry: str,
    size: tuple[float | None, Callable[[], float]] | None = None,
) -> tuple[list[R], list[str]]:
    """Store the chats (`store_with_progress`), then compact the ones `store_one` names
    (`summarise_now`); the results, and the chats whose compaction failed."""
    results, ids = await store_with_progress(items, store_one, progress, size)
    return results, await summarise_now(mem, ids, progress, retry)


async def store_with_progress(
    items: Iterable[T],
    store_one: Callable[[T], Awaitable[tuple[R, str | None]]],
    progress: Progress,
    size: tuple[float | None, Callable[[], float]] | None = None,
) -> tuple[list[R], list[str]]:
    """Store the chats (`memory.imports.storing.store_only`): the results, and the chats `store_one`
    names to compact. The bar counts `items` (a sequence), or with `size` (the total, and how much
    is done) the megabytes of a file read as it is stored."""
    from parla.memory.imports.storing import store_only

    total, done = size or (len(items) if isinstance(items, Sequence) else None, None)
    storing = progress.add_task("storing chats" if size is None else "storing chats (MB read)", total=total)

    def on_stored(_result: R) -> None:
        if done is None:
            progress.advance(storing)
        else:
            progress.update(storing, completed=done())

    return await store_only(items, store_one, on_stored=on_stored)


async def summarise_now(mem: MemoryServices, ids: list[str], progress: Progress, retry: str) -> list[str]:
    """Compact these chats (summaries, facts, summary text, embeddings) with a progress bar; the
    chats whose compaction failed, each said on stderr with `retry` (what to do)."""
    from parla.memory.imports.storing import compact_chats

    def worker(count: int) -> CompactionWorker:
        summarising = progress.add_task("summarising, extracting facts, embedding", total=count)
        return mem.compaction_worker(on_done=lambda _chat, _ok: progress.advance(summarising))

    not_compacted, offline = await compact_chats(ids, worker)
    for cid, error in not_compacted.items():
        err.print(f"parla: could not summarise chat {cid[:8]} ({error}); its turns are stored, {retry}", markup=False)
    if offline:
        err.print(
            f"parla: {len(offline)} chats were summarised offline because Gemini could not be used "
            f"({next(iter(offline.values()))}); Gemini rewrites their summary at their next fold, "
            "`parla memory regenerate CHAT` redoes the rest",
            markup=False,
        )
    return sorted(not_compacted)
