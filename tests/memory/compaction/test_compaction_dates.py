"""Relative dates in the facts and auto pins compaction finds are stored as absolute dates, read in
the user's zone from when their turn was said (not from when compaction ran), in English and
Italian: through the offline summarizer, and through Gemini's facts and pins (the REST emulator)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from parla.daemon.memory_services import open_memory
from parla.daemon.settings import Settings
from parla.memory.compaction.compactor import Compactor
from parla.memory.config import MemoryConfig
from parla.memory.language.absolute_dates import DateReading
from parla.memory.summarizers.extractive import ExtractiveSummarizer
from parla.records.turn import Turn

pytestmark = pytest.mark.tier("fast")


# Wednesday 25 November 2026, 10:30 in Rome; compaction runs whenever it runs (today, here)
SAID = datetime(2026, 11, 25, 9, 30, tzinfo=UTC)
SMALL = MemoryConfig(chunk_size=4, summary_window_size=8, tail=3)


def said(*texts: str) -> list[Turn]:
    return [
        Turn.of("user" if i % 2 == 0 else "model", text, created_at=SAID + timedelta(seconds=i))
        for i, text in enumerate(texts)
    ]


async def test_offline_facts_and_pins_get_the_dates_of_when_they_were_said(store, embedder):
    compactor = Compactor(store, ExtractiveSummarizer(), embedder, SMALL, DateReading("Europe/Rome", ("it", "en")))
    english = said(
        "My sister Anna arrives from Berlin next Tuesday, she stays for a week.",
        "Lovely, do you need a plan?",
        "Yes please, something calm.",
        "Sure.",
    )
    italian = said(
        "Il mio volo per Lisbona parte tra due settimane alle 7:40 dal terminal 1.",
        "Va bene.",
        "Grazie mille.",
        "Prego.",
    )
    chat_en = (await store.create_chat(turns=english)).chat.id
    chat_it = (await store.create_chat(turns=italian)).chat.id
    await compactor.compact(chat_en)
    await compactor.compact(chat_it)

    (facts_en,) = await store.list_facts(chat_en)
    assert facts_en.lines == [
        "User: My sister Anna arrives from Berlin next Tuesday (Tuesday 1 December 2026), she stays for a week."
    ]
    (pin,) = [p for p in await store.list_pins(chat_en) if p.pin_type == "auto"]
    # the clause that says the fact: "she stays for a week" says it of no one once apart
    assert pin.content == 'The user said: "My sister Anna arrives from Berlin next Tuesday (Tuesday 1 December 2026)"'

    (facts_it,) = await store.list_facts(chat_it)
    flight = "Il mio volo per Lisbona parte tra due settimane alle 7:40 (Wednesday 9 December 2026, 07:40)"
    assert facts_it.lines == [f"User: {flight} dal terminal 1."]


async def test_gemini_facts_and_pins_get_the_dates_of_the_turn_they_come_from(gemini, tmp_path):
    settings = Settings(
        store_path=tmp_path / "parla.db",
        gemini_api_key=gemini.api_key,
        gemini_base_url=gemini.base_url,
        summarizer="gemini",
        embedder="offline",
        live_language="it-IT",
        time_zone="Europe/Rome",
        chunk_size=4,
        model_retries=0,
    )
    # the model's lines are its own words, about turns said days apart
    gemini.reply_to("Extract the specific facts", "- Marco parte per Lisbona tra due settimane\n- Ama il caffè")
    gemini.reply_to("durable, important statements", "- [3] 8 | L'utente ha il dentista martedì prossimo")
    turns = said(
        "Marco parte per Lisbona tra due settimane.",
        "Che bello.",
        "Io ho il dentista martedì prossimo, che ansia.",
        "Andrà tutto bene.",
    )
    # the dentist came up a week later, on Wednesday 2 December
    turns[2:] = [t.model_copy(update={"created_at": t.created_at + timedelta(days=7)}) for t in turns[2:]]
    async with open_memory(settings) as mem:
        chat = (await mem.store.create_chat(turns=turns)).chat.id
        await mem.compactor.compact(chat)
        (facts,) = await mem.store.list_facts(chat)
        pins = [p for p in await mem.store.list_pins(chat) if p.pin_type == "auto"]

    # the trip's fact is read from the turn that says it (25 November), not the range's last
    assert facts.lines == ["Marco parte per Lisbona tra due settimane (Wednesday 9 December 2026)", "Ama il caffè"]
    # "martedì prossimo" said on 2 December is Tuesday 8 December: from the pin's own turn
    assert [(p.content, p.source_seq) for p in pins] == [
        ("L'utente ha il dentista martedì (Tuesday 8 December 2026) prossimo", 3)
    ]
