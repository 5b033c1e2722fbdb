"""Recall in both stores: what was said, from several chats when several hold it, each with when it
was said; inside one chat, that chat's windows of what was said as well as its summaries."""

from __future__ import annotations

from datetime import timedelta

import pytest

from parla.memory.compaction.compactor import Compactor
from parla.memory.retrieval.recall import Recall
from parla.records.embedding import embed_texts
from parla.records.turn import Turn
from tests.conftest import T0

pytestmark = pytest.mark.tier("fast")


def _chat(said: list[tuple[str, str]], day: int) -> list[Turn]:
    return [Turn.of(role, text, created_at=T0 + timedelta(days=day, minutes=i)) for i, (role, text) in enumerate(said)]


FERRY_MAY = [
    ("user", "We booked the ferry to Hydra for the ninth of May."),
    ("model", "Lovely, the ferry to Hydra is a beautiful ride."),
    ("user", "The kids want to swim at the little harbour."),
    ("model", "The harbour is calm in May."),
]
FERRY_JUNE = [
    ("user", "The ferry to Hydra was cancelled, we go in June instead."),
    ("model", "A pity, June is warmer anyway."),
]
GARDEN = [
    ("user", "The tomato seedlings on the balcony need more sun."),
    ("model", "Move them to the south side of the balcony."),
]


async def test_recall_returns_what_was_said_in_every_chat_that_holds_it_with_its_date(
    any_store, summarizer, embedder, config
):
    compactor = Compactor(any_store, summarizer, embedder, config)
    ids = []
    for day, said in enumerate((FERRY_MAY, GARDEN, FERRY_JUNE)):
        chat = (await any_store.create_chat(turns=_chat(said, day * 10))).chat
        await compactor.compact(chat.id)
        ids.append(chat.id)
    recall = Recall(any_store, embedder, config)

    found = await recall.recall("when is the ferry to Hydra", None)
    said = [r for r in found if r.kind in ("turn", "turns") and "ferry to Hydra" in r.text]
    assert {r.chat_id for r in said} == {ids[0], ids[2]}
    assert {r.said_at.date() for r in said if r.chat_id == ids[2]} == {(T0 + timedelta(days=20)).date()}

    inside = await recall.recall("swim at the harbour", ids[0])
    assert inside and all(r.chat_id == ids[0] for r in inside)
    assert inside[0].kind in ("turn", "turns") and "harbour" in inside[0].text and inside[0].said_at is not None
    # a chat's own search finds its windows even when the words are not the request's
    (query,) = await embed_texts(embedder, ["sea crossing"], "query")
    windows = await any_store.search_chat(query, ids[0], 3)
    assert windows and all(t.ref.chat_id == ids[0] for t in windows)
    assert [t.similarity for t in windows] == sorted((t.similarity for t in windows), reverse=True)


RIVER = [
    ("user", "We walked along the river to the old stone bridge."),
    ("model", "The stone bridge is lovely at dusk."),
]


async def test_a_date_the_request_names_puts_what_was_said_that_day_first(any_store, summarizer, embedder, config):
    compactor = Compactor(any_store, summarizer, embedder, config)
    ids = []
    for day in (0, 14, 30):  # the same walk told three times: 5, 19 January and 4 February
        chat = (await any_store.create_chat(created_at=T0 + timedelta(days=day), turns=_chat(RIVER, day))).chat
        await compactor.compact(chat.id)
        ids.append(chat.id)
    recall = Recall(any_store, embedder, config)
    # the three tellings tie on meaning and words (which of them a tie puts first is not fixed):
    # only the date can put each one first in turn
    for chat_id, named in zip(ids, ("5 January 2026", "19 January 2026", "4 February 2026"), strict=True):
        found = await recall.recall(f"the walk to the stone bridge on {named}", None, now=T0 + timedelta(days=60))
        assert found[0].chat_id == chat_id
    assert found[0].said_at.date() == (T0 + timedelta(days=30)).date()


async def test_what_was_said_side_by_side_comes_as_one_run_of_turns(any_store, summarizer, embedder, config):
    """Windows next to each other are one answer, not two places spent on one exchange; the run
    says who said each turn."""
    said = [
        ("user", "Our cat Miso hates the vet."),
        ("model", "Many cats do; a towel in the carrier helps Miso."),
        ("user", "Miso hid under the bed when she saw the carrier."),
        ("model", "Leave the carrier open at home so Miso gets used to it."),
        ("user", "Anyway, what is the weather tomorrow?"),
        ("model", "Sunny and mild."),
    ]
    compactor = Compactor(any_store, summarizer, embedder, config)
    chat = (await any_store.create_chat(turns=_chat(said, 0))).chat
    await compactor.compact(chat.id)
    found = await Recall(any_store, embedder, config).recall("Miso and the carrier at the vet", chat.id)
    runs = [r for r in found if r.kind in ("turn", "turns")]
    assert runs[0].range is not None and runs[0].range.end - runs[0].range.start + 1 == config.recall_span_turns
    assert runs[0].text.startswith("User: ") and "\nAssistant: " in runs[0].text
    said = [seq for r in runs for seq in range(r.range.start, r.range.end + 1)]
    assert len(said) == len(set(said))  # no turn twice
    single = Recall(any_store, embedder, config.model_copy(update={"recall_span_turns": 1}))
    assert all(
        r.range.end - r.range.start + 1 <= 2 for r in await single.recall("Miso and the carrier", chat.id) if r.range
    )


SOURDOUGH = [
    ("user", "I finally made a sourdough starter, it bubbles already."),
    ("model", "Congratulations! Feed it every day with flour and water."),
    ("user", "What should I name it?"),
    ("model", "Many people give their starter a funny name, like Bubbles."),
]
FAMILY = [
    ("user", "We went to the zoo on Sunday with the whole family."),
    ("model", "How nice! Who came along?"),
    ("user", "My husband and our daughter. My daughter is called Nina, she is six."),
    ("model", "Six is a great age for the zoo. Did Nina like the giraffes?"),
]


async def test_an_answer_ranks_above_an_echo_of_the_question(any_store, summarizer, embedder, config):
    """ "What's my daughter's name": "What should I name it?" echoes the question's words ("what",
    "name"), "My daughter is called Nina" answers it. The answer comes first."""
    compactor = Compactor(any_store, summarizer, embedder, config)
    ids = []
    # the daughter comes up in many chats, a name in one: the question's rare word is "name"
    daily = [
        [("user", f"My daughter {did} today."), ("model", f"Sounds like your daughter {how}.")]
        for did, how in [
            ("painted a horse", "loves drawing"),
            ("lost a tooth", "is growing fast"),
            ("swam a whole length", "is brave"),
            ("read a book alone", "is a reader"),
            ("baked cookies with me", "had fun"),
        ]
    ]
    for day, said in enumerate((FAMILY, SOURDOUGH, *daily)):
        chat = (await any_store.create_chat(turns=_chat(said, day * 10))).chat
        await compactor.compact(chat.id)
        ids.append(chat.id)
    found = await Recall(any_store, embedder, config).recall("what's my daughter's name", None)
    assert found[0].chat_id == ids[0] and "Nina" in found[0].text, [r.text[:40] for r in found]
