"""`parla memory ...`: maintaining a chat's memory (regenerate summaries, rebuild embeddings, restore
what was forgotten)."""

from __future__ import annotations

from typing import Any

import typer
from rich.markup import escape

from parla.daemon.cli.support import (
    MEMORY,
    command,
    emit_json,
    group,
    iso,
    load_settings,
    open_memory,
    out,
    progress_bar,
    resolve_chat,
    when,
)
from parla.daemon.errors import CommandFailed


@command
async def regenerate(
    chat: str = typer.Argument(..., help="Chat id, id prefix or exact title."),
    range_: str | None = typer.Option(None, "--range", help="Whole chunks to redo, e.g. 11-20 (default: all)."),
) -> None:
    """Redo the chunk summaries and facts of a range, and the meta summaries that cover it."""
    from parla.memory.turn import MessageRange

    rng = MessageRange.parse(range_) if range_ else None
    async with open_memory(load_settings()) as mem:
        cid = await resolve_chat(mem, chat)
        report = await mem.compactor.regenerate(cid, rng)
    out.print(
        f"Regenerated {report.chunk_summaries} chunk summaries, {report.fact_blocks} fact blocks and "
        f"{report.meta_summaries} meta summaries in {report.duration_ms:.0f} ms."
    )


@command
async def reembed(batch: int = typer.Option(64, min=1, help="Texts per embedding call.")) -> None:
    """Rebuild every embedding with the configured embedder (after changing PARLA_EMBEDDER)."""
    from parla.memory.reembed import reembed as reembed_store

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


@command
async def forgotten(
    chat: str = typer.Argument(..., help="Chat id, id prefix or exact title."),
    as_json: bool = typer.Option(False, "--json", help="Print as JSON."),
) -> None:
    """The pins and facts of a chat that were forgotten, numbered for `parla memory restore`."""
    from parla.memory.forgetting import memory_items

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


@command
async def restore(
    chat: str = typer.Argument(..., help="Chat id, id prefix or exact title."),
    numbers: list[int] = typer.Argument(..., min=1, help="Item numbers as `parla memory forgotten CHAT` lists them."),
) -> None:
    """Bring forgotten pins or facts back into the chat's memory. Several numbers at once all refer
    to the list as printed; afterwards the remaining items are listed with their new numbers."""
    from parla.memory.forgetting import memory_items, set_forgotten

    async with open_memory(load_settings()) as mem:
        cid = await resolve_chat(mem, chat)
        items = await memory_items(mem.store, cid, forgotten=True)
        if wrong := [n for n in numbers if n > len(items)]:
            raise CommandFailed(
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


COMMANDS = {
    "memory": group(
        "Maintain the memory: regenerate summaries, rebuild embeddings, restore what was forgotten.",
        {"regenerate": regenerate, "reembed": reembed, "forgotten": forgotten, "restore": restore},
    )
}
PANEL = MEMORY
