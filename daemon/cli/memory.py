"""`parla memory ...`: maintaining a chat's memory (regenerate summaries, rebuild embeddings, restore
what was forgotten)."""

from __future__ import annotations

from typing import Any

import typer
from rich.markup import escape

from ..errors import CommandFailed
from .support import (
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


@command
async def regenerate(
    chat: str = typer.Argument(..., help="Chat id, id prefix or exact title."),
    range_: str | None = typer.Option(None, "--range", help="Whole chunks to redo, e.g. 11-20 (default: all)."),
    facts_only: bool = typer.Option(False, "--facts-only", help="Redo the facts alone, not the summaries."),
) -> None:
    """Redo the chunk summaries and facts of a range, and the meta summaries that cover it."""
    from parla.records.turn import MessageRange

    rng = MessageRange.parse(range_) if range_ else None
    async with open_memory(load_settings()) as mem:
        cid = await resolve_chat(mem.store, chat)
        report = await mem.compactor.regenerate(cid, rng, facts_only=facts_only)
    if facts_only:
        out.print(f"Regenerated {report.fact_blocks} fact blocks in {report.duration_ms:.0f} ms.")
        return
    out.print(
        f"Regenerated {report.chunk_summaries} chunk summaries, {report.fact_blocks} fact blocks and "
        f"{report.meta_summaries} meta summaries in {report.duration_ms:.0f} ms."
    )


@command
async def backfill(as_json: bool = typer.Option(False, "--json", help="Print the counts as JSON.")) -> None:
    """Fill in what every chat's memory lacks: rolling summaries, descriptions (with their
    embeddings), chunk summaries, facts and meta summaries, and what the user said about
    themselves in any turn (the profile). What exists is left as it is, so it can be run again at
    any time; a chat that fails is named and the others go on."""
    from parla.memory.compaction.report import CompactionReport

    reports: list[CompactionReport] = []
    failed: dict[str, str] = {}
    async with open_memory(load_settings()) as mem:
        chats = await mem.store.list_chats(limit=1_000_000)
        with progress_bar() as progress:
            task = progress.add_task("filling in the memory", total=len(chats))
            for chat in chats:
                try:
                    reports.append(await mem.compactor.compact(chat.id))
                    # every turn, also those summarised before the profile read them
                    reports.append(await mem.compactor.learn(chat.id))
                except Exception as e:  # noqa: BLE001 - one chat's failure must not stop the others
                    failed[chat.id] = str(e)
                progress.advance(task)
    counts = {
        "chats": len(chats),
        "described": sum(r.described for r in reports),
        "turns_folded": sum(r.turns_folded for r in reports),
        "chunk_summaries": sum(r.chunk_summaries for r in reports),
        "fact_blocks": sum(r.fact_blocks for r in reports),
        "meta_summaries": sum(r.meta_summaries for r in reports),
        "profile_entries": sum(r.profile_entries for r in reports),
        "failed": failed,
    }
    if as_json:
        emit_json(counts, "memory backfill")
    else:
        out.print(
            f"Backfilled {counts['chats']} chats: {counts['described']} described, {counts['turns_folded']} turns "
            f"folded into summaries, {counts['chunk_summaries']} chunk summaries, {counts['fact_blocks']} fact "
            f"blocks, {counts['meta_summaries']} meta summaries and {counts['profile_entries']} profile entries "
            "written."
        )
    if failed:
        raise CommandFailed(
            f"{len(failed)} chats could not be filled in: "
            + "; ".join(f"{cid}: {why}" for cid, why in failed.items())
            + " (run `parla memory backfill` again once that is fixed)"
        )


@command
async def reembed(batch: int = typer.Option(64, min=1, help="Texts per embedding call.")) -> None:
    """Rebuild every embedding with the configured embedder (after changing PARLA_EMBEDDER)."""
    from parla.memory.retrieval.reembed import reembed as reembed_store
    from parla.memory.retrieval.turn_windows import WindowIndexer

    async with open_memory(load_settings()) as mem:
        with progress_bar() as progress:
            task = progress.add_task(f"embedding with {mem.embedder.name}", total=None)
            count = await reembed_store(
                mem.store, mem.embedder, batch, lambda done, total: progress.update(task, completed=done, total=total)
            )
            task = progress.add_task("indexing what was said", total=None)
            indexer = WindowIndexer(mem.store, mem.embedder, mem.settings.search_window_turns)
            windows = await indexer.index_every_chat(
                lambda done, total: progress.update(task, completed=done, total=total)
            )
    out.print(f"Re-embedded {count} texts with {mem.embedder.name}; indexed {windows} new windows of what was said.")


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
        items = await memory_items(mem.store, await resolve_chat(mem.store, chat), forgotten=True)
    if as_json:
        emit_json(
            [
                {"number": n, "kind": i.kind, "text": i.content, "forgotten_at": iso(i.forgotten_at)}
                for n, i in enumerate(items, start=1)
            ],
            "memory forgotten",
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
        cid = await resolve_chat(mem.store, chat)
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
        {
            "regenerate": regenerate,
            "backfill": backfill,
            "reembed": reembed,
            "forgotten": forgotten,
            "restore": restore,
        },
    )
}
PANEL = MEMORY
