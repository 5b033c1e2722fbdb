"""The switch ranks by evidence, through the real store, the offline embedder and summarizer: the
cases a newcomer's history showed (made-up conversations in the same shapes)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from parla.memory.compaction.compactor import Compactor
from parla.memory.retrieval.search import ChatSearch
from parla.memory.summarizers.extractive import ExtractiveSummarizer
from parla.records.turn import Turn
from tests.conftest import T0

pytestmark = pytest.mark.tier("fast")


def _said(lines: list[tuple[str, str]], day: int) -> list[Turn]:
    return [Turn.of(role, text, created_at=T0 + timedelta(days=day, minutes=i)) for i, (role, text) in enumerate(lines)]


KYOTO = [
    ("user", "Hi Sam! I'm back from our family trip to Kyoto, it was amazing."),
    ("model", "Welcome back! How was the family trip?"),
    ("user", "We saw the temples and the bamboo forest, and the trip by train was so quick."),
    ("model", "The bamboo forest at dawn is magical. Did the family like the train?"),
    ("user", "Yes, the kids loved the train, and the trip ended with a tea ceremony."),
]
FOOD_BANK = [
    ("user", "Hey Sam, my friend Ana volunteers at the food bank on Saturdays."),
    ("model", "That's generous of her. What does she do there?"),
    ("user", "She sorts the donations and packs boxes for families."),
]
GARDEN = [
    ("user", "Hi Sam, the tomatoes in my garden are finally red."),
    ("model", "Great! Did the basil grow too?"),
    ("user", "The basil is huge, I gave some to the neighbours."),
]
PIANO = [
    ("user", "Hello Sam, I started piano lessons with a teacher from Vienna."),
    ("model", "How are the lessons going?"),
    ("user", "Slowly, but I can play a short waltz already."),
]

# Everyday chats beside them, so the history has as many windows as a few weeks of use.
OTHERS = [
    [
        ("user", f"Hi Sam, today I {did} and it took all {when}."),
        ("model", f"Sounds like a full {when}. How do you feel after you {did}?"),
        ("user", f"Tired but happy, I want to do it again next {when}."),
    ]
    for did, when in [
        ("painted the fence", "afternoon"),
        ("fixed my bike", "morning"),
        ("baked bread", "evening"),
        ("cleaned the attic", "weekend"),
        ("ran ten kilometres", "morning"),
        ("wrote a poem", "night"),
        ("repaired the roof", "day"),
        ("sewed a dress", "afternoon"),
    ]
]
CHATS = [KYOTO, FOOD_BANK, GARDEN, PIANO, *OTHERS]


async def _history(store, embedder, config, chats: list[list[tuple[str, str]]]) -> list[str]:
    compactor = Compactor(store, ExtractiveSummarizer(), embedder, config)
    ids = []
    for day, lines in enumerate(chats):
        chat = (await store.create_chat(turns=_said(lines, day * 7))).chat
        await compactor.compact(chat.id)
        ids.append(chat.id)
    return ids


async def test_a_trip_no_chat_talks_about_is_not_switched_to(store, embedder, config):
    """ "Our family trip by train to Iceland": the Kyoto chat says "family", "trip" and "train",
    and leads every other chat by far, but no chat says Iceland: a name is specific, so the
    search does not switch; it asks (the Kyoto chat holds more of the request than the name)."""
    ids = await _history(store, embedder, config, CHATS)
    search = ChatSearch(store, embedder, config)
    now = T0 + timedelta(days=40)

    result = await search.search("take me to the chat about our family trip by train to Iceland", now=now)
    assert result.decision != "switch", result.reason
    assert "no chat says 'iceland'" in result.reason

    kyoto = await search.search("take me to the chat about my trip to Kyoto", now=now)
    assert kyoto.decision == "switch" and kyoto.candidates[0].chat_id == ids[0], kyoto.reason
