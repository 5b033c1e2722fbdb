"""Storing many chats at once (`parla import`, `parla sync`): each chat stored by the caller's rule
(`store_only`), then every chat that needs it compacted (summaries, facts, summary text,
embeddings) by one bounded worker (`compact_chats`), or queued for the background
(memory.compaction.summary_queue). A chat whose compaction fails keeps its turns; running the same command
again finishes it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import TypeVar

from parla.records.chat import Chat

from ..compaction.compactor import CompactionWorker
from ..store.protocol import AppendResult, ChatsWithMemory

T = TypeVar("T")
R = TypeVar("R")


async def store_only(
    items: Iterable[T],
    store_one: Callable[[T], Awaitable[tuple[R, str | None]]],
    on_stored: Callable[[R], None] = lambda _result: None,
) -> tuple[list[R], list[str]]:
    """Store each item with `store_one`: the results, and the chats to compact, each once."""
    results: list[R] = []
    ids: list[str] = []
    for item in items:
        result, compact = await store_one(item)
        results.append(result)
        on_stored(result)
        if compact is not None:
            ids.append(compact)
    return results, list(dict.fromkeys(ids))


async def compact_chats(
    ids: list[str], compaction_worker: Callable[[int], CompactionWorker]
) -> tuple[dict[str, str], dict[str, str]]:
    """Compact these chats with the worker `compaction_worker(count)` makes: the chats whose
    compaction failed, and those summarised offline, each with why."""
    async with compaction_worker(len(ids)) as worker:
        for cid in ids:
            worker.schedule(cid)
        await worker.drain()
    return dict(worker.last_errors), dict(worker.offline)


async def copy_chat(source: ChatsWithMemory, target: ChatsWithMemory, chat: Chat) -> AppendResult:
    """Copy a chat's turns, title and pins to another store; a repeat copies only what is new
    (both stores store a turn id once)."""
    history = await source.load_history(chat.id)
    result = await target.create_chat(
        chat_id=chat.id, title=chat.title, created_at=chat.created_at, turns=history.full_history
    )
    for pin in await source.list_pins(chat.id):
        await target.add_pin(pin)
    return result
