"""The context builder: budget, order, what it drops."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parla.kernel.tokens import estimate_tokens
from parla.memory.config import MemoryConfig
from parla.memory.context import SECTION_ORDER, build_context, load_context
from parla.records.chat import Chat
from parla.records.facts import FactBlock
from parla.records.pins import Pin
from parla.records.summary import Summary, SummaryLevel
from parla.records.turn import MessageRange, Turn
from tests.conftest import T0

pytestmark = pytest.mark.tier("fast")

text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=600)


def chat(summary: str = "", through: int = 0, count: int = 0) -> Chat:
    return Chat(
        id="c",
        created_at=T0,
        last_activity_at=T0,
        rolling_summary=summary,
        summarized_through=through,
        turn_count=count,
    )


@settings(max_examples=200, deadline=None)
@given(
    summary=st.text(max_size=3000),
    tail=st.lists(text, max_size=30),
    pins=st.lists(st.tuples(text, st.floats(0, 10)), max_size=10),
    facts=st.lists(st.lists(text, min_size=1, max_size=5), max_size=10),
    metas=st.lists(text, max_size=4),
    important=st.lists(st.tuples(text, st.floats(0, 10)), max_size=8),
    budget=st.integers(200, 4000),
    min_tail=st.integers(0, 4),
)
def test_context_never_exceeds_its_budget(summary, tail, pins, facts, metas, important, budget, min_tail):
    config = MemoryConfig(prompt_memory_budget=budget, context_min_tail_turns=min_tail)
    through = 10 * len(facts)
    turns = [Turn.of("user" if i % 2 == 0 else "model", t, seq=through + i + 1) for i, t in enumerate(tail)]
    ctx = build_context(
        chat(summary, through, through + len(turns)),
        turns,
        [Pin(chat_id="c", content=c, importance=i) for c, i in pins],
        [
            Summary(chat_id="c", level=SummaryLevel.META, range=MessageRange(start=1, end=10), text=m, updated_at=T0)
            for m in metas
        ],
        [
            FactBlock(chat_id="c", range=MessageRange(start=10 * i + 1, end=10 * i + 10), lines=lines, updated_at=T0)
            for i, lines in enumerate(facts)
        ],
        config,
        [Turn.of("user", t, seq=i + 1, importance=imp) for i, (t, imp) in enumerate(important)],
    )
    assert ctx.total_tokens <= budget
    assert ctx.total_tokens == estimate_tokens(ctx.render())
    # What is kept of the tail is its newest turns, in order.
    assert [t.seq for t in ctx.tail] == [t.seq for t in turns[len(turns) - len(ctx.tail) :]]
    # Nothing vanishes silently: every item is kept or reported.
    offered = len(pins) + (1 if summary else 0) + len(metas) + sum(map(len, facts)) + len(turns)
    offered += sum(1 for _, imp in important if imp >= config.context_important_min)
    kept = sum(len(items) for items in ctx.sections.values())
    shortened = sum(1 for d in ctx.dropped if d.reason.startswith("shortened"))
    assert kept + len(ctx.dropped) - shortened == offered


def test_order_is_stable_and_sections_are_labelled():
    turns = [Turn.of("user", "Where do we stay in Kyoto?", seq=21), Turn.of("model", "A ryokan near Gion.", seq=22)]
    pins = [
        Pin(chat_id="c", content="vegetarian", importance=3, created_at=T0),
        Pin(chat_id="c", content="allergic to shellfish", importance=9, created_at=T0 + timedelta(seconds=1)),
    ]
    facts = [
        FactBlock(chat_id="c", range=MessageRange(start=1, end=10), lines=["flight on April 3"], updated_at=T0),
        FactBlock(chat_id="c", range=MessageRange(start=21, end=30), lines=["in the tail"], updated_at=T0),
    ]
    ctx = build_context(chat("Trip to Japan in April.", 20, 22), turns, pins, [], facts, MemoryConfig())
    rendered = ctx.render()
    assert rendered.index("allergic") < rendered.index("vegetarian") < rendered.index("Trip to Japan")
    assert rendered.index("Trip to Japan") < rendered.index("flight on April 3") < rendered.index("User: Where do we")
    assert "in the tail" not in rendered  # facts of the verbatim tail would repeat it
    assert (
        rendered
        == build_context(chat("Trip to Japan in April.", 20, 22), turns, pins[::-1], [], facts, MemoryConfig()).render()
    )
    assert list(ctx.section_tokens()) == list(SECTION_ORDER)
    assert ctx.render(include_tail=False).endswith("- flight on April 3 (turns 1-10)\n")  # where it came from


def test_over_budget_drops_old_tail_first_then_facts_and_reports():
    turns = [Turn.of("user", "word " * 200, seq=i + 1) for i in range(10)]
    facts = [FactBlock(chat_id="c", range=MessageRange(start=1, end=10), lines=["fact " * 20] * 3, updated_at=T0)]
    config = MemoryConfig(prompt_memory_budget=600, context_min_tail_turns=2)
    ctx = build_context(chat("s " * 100, 10, 20), turns, [], [], facts, config)
    assert ctx.total_tokens <= 600
    reasons = [(d.section, d.reason) for d in ctx.dropped]
    assert reasons[:8] == [("tail", "oldest tail turn over budget")] * 8
    assert len(ctx.tail) == 2 and ctx.tail == turns[-2:]
    assert all(section in ("tail", "facts", "summary") for section, _ in reasons)


def test_trimming_the_tail_or_the_summary_logs_one_structured_line(caplog):
    turns = [Turn.of("user", "word " * 200, seq=i + 1) for i in range(10)]
    config = MemoryConfig(prompt_memory_budget=600, context_min_tail_turns=2)
    with caplog.at_level("INFO", logger="parla.memory.context"):
        build_context(chat("s " * 100, 10, 20), turns[:1], [], [], [], config)  # fits: nothing logged
        assert not caplog.records
        ctx = build_context(chat("s " * 100, 10, 20), turns, [], [], [], config)
    (record,) = caplog.records
    dropped = [d for d in ctx.dropped if d.section == "tail"]
    assert record.event == "context_trimmed" and record.chat_id == "c" and record.budget == 600
    assert record.tail_dropped == len(dropped) == 8 and record.tail_dropped_tokens == sum(d.tokens for d in dropped)
    assert record.dropped["tail"] == 8 and record.tokens <= 600


def test_a_single_huge_turn_is_shortened_not_lost():
    turn = Turn.of("user", "x" * 40_000, seq=1)
    ctx = build_context(chat(count=1), [turn], [], [], [], MemoryConfig(prompt_memory_budget=300))
    assert ctx.total_tokens <= 300 and len(ctx.tail) == 1
    assert ctx.tail[0].id == turn.id and 0 < len(ctx.tail[0].text) < len(turn.text)
    assert ctx.sections["tail"][0].text == ctx.tail[0].transcript_line()
    assert ctx.dropped[-1].reason == "shortened to fit the budget"


async def test_load_context_reads_the_store(store, compactor):
    from tests.conftest import make_turns

    c = (await store.create_chat(turns=make_turns(45))).chat
    await compactor.compact(c.id)
    await store.add_pin(Pin(chat_id=c.id, content="prefers mornings", importance=7))
    ctx = await load_context(store, c.id, MemoryConfig())
    assert ctx.sections["pins"][0].text == "- prefers mornings"
    assert ctx.sections["summary"] and len(ctx.tail) == 12 and ctx.tail[-1].seq == 45
    assert ctx.total_tokens <= 3000


def test_important_old_turns_get_a_place_after_the_pins_and_say_where_they_come_from():
    allergy = Turn.of("user", "I'm allergic to penicillin.", seq=3, importance=9.5)
    daughter = Turn.of("user", "My daughter is called Ana.", seq=40, importance=8)
    flight = Turn.of("user", "My flight is on June 3.", seq=7, importance=8)
    small = Turn.of("user", "Nice weather.", seq=9, importance=3)
    pin = Pin(chat_id="c", content="allergic to penicillin", importance=9, source_turn_id=allergy.id, source_seq=3)
    tail = [Turn.of("user", "And now?", seq=51)]
    ctx = build_context(
        chat("A long chat.", 50, 51), tail, [pin], [], [], MemoryConfig(), [allergy, daughter, flight, small]
    )
    # the pinned turn is said by its pin; the others in the order they were said, each with its turn
    assert [i.line for i in ctx.sections["important"]] == [
        "User: My flight is on June 3. (turn 7)",
        "User: My daughter is called Ana. (turn 40)",
    ]
    assert ctx.sections["pins"][0].line == "- allergic to penicillin (turn 3)"
    rendered = ctx.render()
    assert rendered.index("Pinned") < rendered.index("Important earlier") < rendered.index("Conversation summary")
    assert "A long chat. (turns 1-50)" in rendered
    # over budget, the least important earlier turn goes before any pin
    big = pin.model_copy(update={"content": "allergic to penicillin " * 30})
    tight = build_context(
        chat("", 50, 51),
        tail,
        [big],
        [],
        [],
        MemoryConfig(prompt_memory_budget=200, context_important_budget=100),
        [daughter, flight],
    )
    assert tight.total_tokens <= 200 and tight.sections["pins"]
    gone = [d for d in tight.dropped if d.section == "important"]
    assert gone and gone[0].reason == "least important earlier turn over budget"


def test_turns_of_different_models_are_treated_alike():
    """A chat answered by several Live models (model_variant) gets the same context as if one model answered."""
    said = [
        Turn.of("model", f"answer {i} about the trip on June {i}", seq=i + 1, model_variant=f"live-{i % 3}")
        for i in range(6)
    ]
    plain = [t.model_copy(update={"model_variant": None}) for t in said]
    config = MemoryConfig(prompt_memory_budget=200, context_min_tail_turns=1)
    varied = build_context(chat(count=6), said, [], [], [], config)
    same = build_context(chat(count=6), plain, [], [], [], config)
    assert varied.render() == same.render() and varied.dropped == same.dropped


def test_a_long_unsummarised_tail_is_fitted_in_time_linear_in_its_turns(monkeypatch):
    # Each dropped tail turn recounted every item left, so an uncompacted chat of thousands of
    # turns (an import whose summaries wait) cost millions of token estimates at every context.
    from parla.memory import context

    counted = 0

    def counting(text: str) -> int:
        nonlocal counted
        counted += 1
        return estimate_tokens(text)

    monkeypatch.setattr(context, "estimate_tokens", counting)
    turns = [
        Turn.of("user" if i % 2 == 0 else "model", f"turn number {i} of a long chat", seq=i) for i in range(1, 3001)
    ]
    ctx = build_context(chat(count=len(turns)), turns, [], [], [], MemoryConfig(prompt_memory_budget=3000))
    assert ctx.accounted_tokens() <= 3000 and ctx.tail[-1].seq == 3000
    assert counted < 10 * len(turns), counted
