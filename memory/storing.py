"""Storing many chats at once (`parla import`, `parla sync`): each chat stored by the caller's rule,
then every chat that needs it compacted (summaries, facts, summary text, embeddings) by one
bounded worker. A chat whose compaction fails keeps its turns; running the same command again
finishes it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Generic, TypeVar

from parla.memory.chat import Chat
from parla.memory.compaction import CompactionWorker
from parla.memory.store import AppendResult, ChatStore

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class StoredChats(Generic[R]):
    results: list[R]
    not_compacted: dict[str, str]  # chat id: why its compaction failed
    offline: dict[str, str]  # chat id: why it was summarised offline


async def store_chats(
    items: Iterable[T],
    store_one: Callable[[T], Awaitable[tuple[R, str | None]]],
    compaction_worker: Callable[[int], CompactionWorker],
    on_stored: Callable[[R], None] = lambda _result: None,
) -> StoredChats[R]:
    """Store each item with `store_one` (its result, and the id of a chat to compact or None),
    then compact those chats, each once, with the worker `compaction_worker(count)` makes."""
    results: list[R] = []
    ids: list[str] = []
    for item in items:
        result, compact = await store_one(item)
        results.append(result)
        on_stored(result)
        if compact is not None:
            ids.append(compact)
    unique = list(dict.fromkeys(ids))
    async with compaction_worker(len(unique)) as worker:
        for cid in unique:
            worker.schedule(cid)
        await worker.drain()
    return StoredChats(results, dict(worker.last_errors), dict(worker.offline))


async def copy_chat(source: ChatStore, target: ChatStore, chat: Chat) -> AppendResult:
    """Copy a chat's turns, title and pins to another store; a repeat copies only what is new
    (both stores store a turn id once)."""
    history = await source.load_history(chat.id)
    result = await target.create_chat(
        chat_id=chat.id, title=chat.title, created_at=chat.created_at, turns=history.full_history
    )
    for pin in await source.list_pins(chat.id):
        await target.add_pin(pin)
    return result
