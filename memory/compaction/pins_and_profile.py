"""What the detections of a compaction run found, kept: auto pins (each fact once, a fact the user
forgot never pinned again) with the source turn of a `remember` pin that was pinned before its
turn was stored, and the user's durable statements as entries of their profile across chats
(`parla.records.profile`), each once (its id derives from its turn and fact)."""

from __future__ import annotations

from parla.records.turn import Turn

from ..config import MemoryConfig
from ..language.auto_pins import PinCandidate, find_sources, new_auto_pins
from ..language.profile_rules import new_profile_entries
from ..store.protocol import MemoryRecords
from .report import CompactionReport


async def pin_found(
    store: MemoryRecords, chat_id: str, found: list[PinCandidate], read: list[Turn], report: CompactionReport
) -> None:
    """Pin what the detections found that no pin says yet (forgotten pins count: a fact the user
    had forgotten is not pinned again), and give unsourced `remember` pins their turn."""
    if not found and not read:
        return
    existing = await store.list_pins(chat_id) + await store.list_pins(chat_id, forgotten=True)
    added = await store.add_new_pins(new_auto_pins(chat_id, sorted(found, key=lambda c: c.source.seq), existing))
    report.auto_pins += len(added)
    for pin in find_sources([p for p in existing if p.pin_type == "manual"], read):
        await store.add_pin(pin)


async def add_to_profile(
    store: MemoryRecords, config: MemoryConfig, chat_id: str, found: list[PinCandidate], report: CompactionReport
) -> None:
    """The user's durable statements `found` that the profile holds no entry of yet, added."""
    if not found or not config.profile_auto:
        return
    fresh = new_profile_entries(
        chat_id, sorted(found, key=lambda c: c.source.seq), await store.list_profile(history=True)
    )
    report.profile_entries += len(await store.save_profile(fresh))
