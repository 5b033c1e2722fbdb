"""What the detections of a compaction run found, kept: auto pins (each fact once, a fact the user
forgot never pinned again) with the source turn of a `remember` pin that was pinned before its
turn was stored, and the user's durable statements as entries of their profile across chats
(`parla.records.profile`), each once (its id derives from its turn and fact). `learn_from_chat`
reads every user turn of a chat for the profile alone (an import, `parla memory backfill`)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace

from parla.records.turn import Turn

from ..config import MemoryConfig
from ..language.absolute_dates import DateReading
from ..language.auto_pins import PinCandidate, find_sources, new_auto_pins, offline_candidates
from ..language.profile_rules import new_profile_entries
from ..store.protocol import ChatsWithMemory, MemoryRecords
from .report import CompactionReport

# Turns read at once by `learn_from_chat`: a chat of thousands of turns is not held whole.
_LEARN_PAGE = 500


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


def dated(dates: DateReading | None, candidates: Sequence[PinCandidate]) -> list[PinCandidate]:
    """The candidates with their relative dates made absolute from when their turn was said."""
    if dates is None:
        return list(candidates)
    return [replace(c, content=dates.dated(c.content, c.source.created_at)) for c in candidates]


async def learn_from_chat(
    store: ChatsWithMemory, config: MemoryConfig, dates: DateReading | None, chat_id: str, report: CompactionReport
) -> None:
    """Every user turn of the chat read by the rules, a page at a time, and what they say about the
    user added to the profile (no model call: an import of thousands of chats reads them all)."""
    chat = await store.get_chat(chat_id)
    for start in range(1, chat.turn_count + 1, _LEARN_PAGE):
        turns = await store.load_turns(chat_id, start, start + _LEARN_PAGE - 1)
        said = await asyncio.to_thread(_read, dates, turns)
        await add_to_profile(store, config, chat_id, said, report)


def _read(dates: DateReading | None, turns: list[Turn]) -> list[PinCandidate]:
    return dated(dates, offline_candidates(turns))
