"""Auto pins through a real compaction on the SQLite store: detected from the raw turns, pinned
once, listed, edited and forgotten like the user's own, and a `remember` pin gets its turn."""

from __future__ import annotations

from collections import Counter

import pytest

from parla.memory.compaction.compactor import Compactor
from parla.memory.config import MemoryConfig
from parla.memory.language.pieces import READ_AT_ONCE
from parla.memory.summarizers.extractive import ExtractiveSummarizer
from parla.records.pins import Pin
from parla.records.turn import MessageRange, Turn
from tests.conftest import make_turns

pytestmark = pytest.mark.tier("fast")

CONFIG = MemoryConfig(summary_window_size=8, tail=3, chunk_size=4, chunk_summarize_threshold=400, summary_token_cap=120)


def said(*texts: str) -> list[Turn]:
    """The user says each text and the assistant answers."""
    return [t for text in texts for t in (Turn.of("user", text), Turn.of("model", "I see, tell me more."))]


async def test_a_durable_statement_is_pinned_once_with_its_turn_and_importance(store, embedder):
    compactor = Compactor(store, ExtractiveSummarizer(), embedder, CONFIG)
    turns = said("Hello there.", "I'm allergic to penicillin.", "Lovely day.", "I am allergic to penicillin!")
    chat = (await store.create_chat(turns=turns)).chat
    report = await compactor.compact(chat.id)
    (pin,) = await store.list_pins(chat.id)
    assert report.auto_pins == 1
    assert (pin.pin_type, pin.importance, pin.source_seq) == ("auto", 9.5, 3)
    assert pin.source_turn_id == turns[2].id and "allergic to penicillin" in pin.content
    # the chunk summary of its range carries the importance of what was said in it
    summaries = {str(s.range): s.importance for s in await store.list_summaries(chat.id)}
    assert summaries["1-4"] == 9.5 and summaries["5-8"] == 9.5
    # a regeneration finds it again and pins nothing new
    await compactor.regenerate(chat.id, None)
    assert [p.id for p in await store.list_pins(chat.id)] == [pin.id]
    assert (await store.stats(chat.id)).auto_pins == 1


async def test_an_edited_or_forgotten_auto_pin_stays_as_the_user_left_it(store, embedder):
    compactor = Compactor(store, ExtractiveSummarizer(), embedder, CONFIG)
    chat = (await store.create_chat(turns=said("My daughter is called Ana.", "Fine.", "Good.", "Ok."))).chat
    await compactor.compact(chat.id)
    (pin,) = await store.list_pins(chat.id)
    edited = await store.add_pin(pin.model_copy(update={"content": "Daughter: Ana (born 2019)", "importance": 10}))
    await compactor.regenerate(chat.id, None)
    (kept,) = await store.list_pins(chat.id)
    assert (kept.content, kept.importance, kept.source_seq) == (edited.content, 10, 1)
    await store.set_pin_forgotten(pin.id, True)
    await store.append_turns(chat.id, said("My daughter is called Ana.", "Yes.", "Right.", "Sure."))
    await compactor.compact(chat.id)
    assert await store.list_pins(chat.id) == []  # said again, still forgotten: not pinned anew


async def test_a_remember_pin_gets_the_turn_it_was_asked_in(store, embedder):
    compactor = Compactor(store, ExtractiveSummarizer(), embedder, CONFIG)
    chat = (await store.create_chat(turns=make_turns(2))).chat
    # pinned while the asking turn was still held back (not stored yet)
    remembered = await store.add_pin(Pin(chat_id=chat.id, content="The user's bike lock combination: 2231"))
    asking = said("Please remember my bike lock combination, 2231.", "Thanks.", "Bye.")
    await store.append_turns(chat.id, asking)
    await compactor.compact(chat.id)
    pins = {p.id: p for p in await store.list_pins(chat.id)}
    assert (pins[remembered.id].source_turn_id, pins[remembered.id].source_seq) == (asking[0].id, 3)


async def test_auto_pins_can_be_turned_off(store, embedder):
    off = CONFIG.model_copy(update={"auto_pins": False})
    compactor = Compactor(store, ExtractiveSummarizer(), embedder, off)
    chat = (await store.create_chat(turns=said("I'm allergic to nuts.", "a", "b", "c"))).chat
    await compactor.compact(chat.id)
    assert await store.list_pins(chat.id) == [] and await store.list_facts(chat.id)


async def test_pins_and_facts_are_detected_per_range_once(store, embedder):
    class Counting(ExtractiveSummarizer):
        def __init__(self) -> None:
            self.ranges: list[MessageRange] = []

        async def pins(self, turns):  # type: ignore[no-untyped-def]
            self.ranges.append(MessageRange(start=turns[0].seq, end=turns[-1].seq))
            return await super().pins(turns)

    summarizer = Counting()
    compactor = Compactor(store, summarizer, embedder, CONFIG)
    chat = (await store.create_chat(turns=make_turns(8))).chat
    await compactor.compact(chat.id)
    await compactor.compact(chat.id)
    assert sorted(str(r) for r in summarizer.ranges) == ["1-4", "5-8"]


async def test_a_pasted_document_gives_a_few_pins_each_a_sentence_or_less(store, embedder):
    # a turn of 12,000 characters without a full stop was one "statement" (pinned whole, and each
    # rule read it with a cost growing as its square), and a document of a thousand statements gave
    # a thousand pins, each dated and compared with every other (issue 42, item 3)
    compactor = Compactor(store, ExtractiveSummarizer(), embedder, CONFIG)
    run_on = ("my birthday is soon and the gate code is on the note " * 230)[:12_000]
    names = [f"Ma{chr(97 + n // 26)}{chr(97 + n % 26)}o" for n in range(200)]  # Maaao, Maabo, ...
    listed = " ".join(f"My cousin {name} lives in Rome." for name in names) + " I'm allergic to penicillin."
    turns = said(run_on, listed)
    chat = (await store.create_chat(turns=turns)).chat
    await compactor.compact(chat.id)
    pins = await store.list_pins(chat.id)
    by_turn = Counter(p.source_turn_id for p in pins)
    assert set(by_turn) == {turns[0].id, turns[2].id} and max(by_turn.values()) <= 5
    assert all(len(p.content) <= READ_AT_ONCE + len('The user said: ""') for p in pins)
    # the most important of the list is kept: the allergy said last
    assert any("allergic to penicillin" in p.content for p in pins)
