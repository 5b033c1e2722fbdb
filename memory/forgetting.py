"""Forgetting: the user can take a pin or one fact line out of a chat's memory.

It is soft. A forgotten pin keeps its row with `forgotten_at` set; a forgotten fact line moves
from its range's lines to that range's `forgotten` lines, and the range is re-embedded without
it, so search no longer finds the chat by it either. Neither reaches a prompt again, and
re-extracting the range leaves the line out. `parla forgotten` lists what was forgotten and
`parla restore` brings an item back. An entry of the user's profile (across chats) is forgotten the
same way, with `forgotten_at`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from parla.records.embedding import Embedder, embed_texts
from parla.records.facts import format_fact_lines
from parla.records.profile import ProfileEntry
from parla.records.turn import MessageRange

from .errors import StoreError
from .store.protocol import MemoryRecords

ItemKind = Literal["pin", "fact", "profile"]


@dataclass(frozen=True)
class MemoryItem:
    """A pin or one fact line of a chat, or an entry of the user's profile (its chat: the one it
    was said in, "" when the user wrote it)."""

    kind: ItemKind
    chat_id: str
    content: str
    pin_id: str | None = None
    entry_id: str | None = None  # a profile entry's
    range: MessageRange | None = None  # a fact line's: the messages it was extracted from
    source_seq: int | None = None  # a pin's: the turn it was said in, when known
    # when it was forgotten (for a fact line: when its range last changed)
    forgotten_at: datetime | None = None


async def memory_items(store: MemoryRecords, chat_id: str, *, forgotten: bool = False) -> list[MemoryItem]:
    """The chat's pins (most important first), then its fact lines in message order; with
    `forgotten`, the forgotten ones instead."""
    items = [
        MemoryItem("pin", chat_id, p.content, pin_id=p.id, source_seq=p.source_seq, forgotten_at=p.forgotten_at)
        for p in await store.list_pins(chat_id, forgotten=forgotten)
    ]
    for block in await store.list_facts(chat_id):
        for line in block.forgotten if forgotten else block.lines:
            items.append(
                MemoryItem(
                    "fact", chat_id, line, range=block.range, forgotten_at=block.updated_at if forgotten else None
                )
            )
    return items


def profile_item(entry: ProfileEntry) -> MemoryItem:
    return MemoryItem(
        "profile",
        entry.chat_id or "",
        entry.content,
        entry_id=entry.id,
        source_seq=entry.source_seq,
        forgotten_at=entry.forgotten_at,
    )


async def profile_items(store: MemoryRecords, *, forgotten: bool = False) -> list[MemoryItem]:
    """The profile's current entries, most important first; with `forgotten`, the forgotten ones."""
    if not forgotten:
        return [profile_item(e) for e in await store.list_profile()]
    return [profile_item(e) for e in await store.list_profile(history=True) if e.forgotten_at is not None]


def source_of(item: MemoryItem) -> str | None:
    """Where the item comes from, as the context says it ("turn 412", "turns 11-20")."""
    if item.range is not None:
        return f"turns {item.range}"
    return None if item.source_seq is None else f"turn {item.source_seq}"


async def set_forgotten(store: MemoryRecords, embedder: Embedder, item: MemoryItem, forgotten: bool) -> None:
    """Forget the item, or (`forgotten=False`) restore it."""
    if item.kind == "pin":
        assert item.pin_id is not None
        await store.set_pin_forgotten(item.pin_id, forgotten)
        return
    if item.kind == "profile":
        assert item.entry_id is not None
        await store.set_profile_forgotten(item.entry_id, forgotten)
        return
    block = next((b for b in await store.list_facts(item.chat_id) if b.range == item.range), None)
    source = (block.lines if forgotten else block.forgotten) if block else []
    if block is None or item.content not in source:
        state = "remembered" if forgotten else "forgotten"
        raise StoreError(f"the fact {item.content!r} is not among the {state} facts of chat {item.chat_id}")
    remaining = [line for line in source if line != item.content]
    target = (block.forgotten if forgotten else block.lines) + [item.content]
    lines, gone = (remaining, target) if forgotten else (target, remaining)
    embedded = (await embed_texts(embedder, [format_fact_lines(lines)]))[0] if lines else None
    await store.set_fact_lines(item.chat_id, block.range, lines, gone, embedded)
