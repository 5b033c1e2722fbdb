"""What every `parla` command shares: the consoles, settings loading, the error wrapper, progress
bars and JSON output."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from datetime import datetime
from functools import wraps
from typing import Any, TypeVar

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from daemon.control import CommandError, DaemonNotRunning
from daemon.logs import configure_logging
from daemon.memory_services import ConfigError, MemoryServices
from daemon.settings import Settings
from daemon.wake import WakeWordError
from memory.compaction import CompactionWorker, RangeError
from memory.embedding import ModelError
from memory.importer import find_chats_named
from memory.store import ChatNotFound, StoreError
from voice.audio import AudioDeviceError
from voice.live import LiveSessionFailed

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)

T = TypeVar("T")


def load_settings() -> Settings:
    try:
        settings = Settings()
    except ValidationError as e:
        first = e.errors()[0]
        name = ".".join(str(p) for p in first["loc"])
        raise ConfigError(f"setting {name} (PARLA_{name.upper()}): {first['msg']}") from None
    configure_logging(settings)
    return settings


def command(fn: Callable[..., Awaitable[T]]) -> Callable[..., T]:
    """Run an async command; known failures become one line on stderr and exit code 1."""

    @wraps(fn)
    def run(*args: Any, **kwargs: Any) -> T:
        try:
            return asyncio.run(fn(*args, **kwargs))
        except (
            StoreError,
            ConfigError,
            ModelError,
            RangeError,
            AudioDeviceError,
            LiveSessionFailed,
            DaemonNotRunning,
            CommandError,
            WakeWordError,
            ValueError,
            OSError,
        ) as e:
            err.print(f"parla: error: {e}", markup=False)
            raise typer.Exit(1) from None
        except KeyboardInterrupt:
            err.print("parla: interrupted; everything stored so far is kept", markup=False)
            raise typer.Exit(130) from None

    return run


async def resolve_chat(mem: MemoryServices, ref: str) -> str:
    """The chat an id, the start of one, or an imported chat's own id names."""
    chats = await find_chats_named(mem.store, ref)
    if not chats:
        raise ChatNotFound(ref)
    if len(chats) > 1:
        names = ", ".join(f"{c.id[:8]} ({c.display_title})" for c in chats[:5])
        raise StoreError(f"{ref!r} matches {len(chats)} chats: {names}; give more of the id")
    return chats[0].id


def progress_bar() -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=not err.is_terminal,
    )


def iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def when(value: datetime) -> str:
    return value.astimezone().strftime("%Y-%m-%d %H:%M")


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")


async def summarise(mem: MemoryServices, ids: list[str], progress: Progress, retry: str) -> list[str]:
    """Compact the chats (summaries, facts, description, embeddings); returns those that failed."""
    settings = mem.settings
    summarising = progress.add_task("summarising, extracting facts, embedding", total=len(set(ids)))
    worker = CompactionWorker(
        mem.compactor,
        concurrency=settings.compaction_concurrency,
        retries=settings.model_retries,
        retry_delay=settings.model_retry_delay,
        on_done=lambda _chat, _ok: progress.advance(summarising),
    )
    async with worker:
        for cid in dict.fromkeys(ids):
            worker.schedule(cid)
        await worker.drain()
    for cid, error in worker.last_errors.items():
        err.print(f"parla: could not summarise chat {cid[:8]} ({error}); its turns are stored, {retry}", markup=False)
    if worker.offline:
        err.print(
            f"parla: {len(worker.offline)} chats were summarised offline because Gemini could not be used "
            f"({next(iter(worker.offline.values()))}); Gemini rewrites their summary at their next fold, "
            "`parla memory regenerate CHAT` redoes the rest",
            markup=False,
        )
    return sorted(worker.last_errors)
