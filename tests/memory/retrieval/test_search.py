"""Chat search: the ranking rules on their own, then quality on a small hand-written set."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from parla.memory.compaction.compactor import Compactor
from parla.memory.embedders.offline import WordTable
from parla.memory.errors import EmptyRequest
from parla.memory.imports.importer import chat_id_of, parse_line, turns_of
from parla.memory.retrieval.search import ChatSearch, RequestWords, Thresholds, rank
from parla.memory.store.protocol import ChatMatch, TextMatch, TextRef, WordCounts
from parla.memory.summarizers.extractive import ExtractiveSummarizer
from parla.records.turn import MessageRange, Turn
from tests.conftest import T0, make_turns

pytestmark = pytest.mark.tier("fast")

DATA = Path(__file__).parents[2] / "data"
# words_weight 0: these rules are about the decision on similarities alone
RULES = Thresholds(
    min_similarity=0.3,
    min_score=0.3,
    switch_score=0.3,
    switch_margin=0.05,
    max_candidates=3,
    words_weight=0.0,
    date_weight=0.2,
    recency_weight=0.05,
    half_life_days=30,
)
NO_WORDS = RequestWords([], WordCounts(0, {}), WordTable())


def match(chat_id: str, similarity: float, days_ago: float = 0, text: str = "text") -> ChatMatch:
    at = T0 - timedelta(days=days_ago)
    return ChatMatch(chat_id, chat_id.upper(), at, at, (TextMatch(TextRef(chat_id, "summary_text"), text, similarity),))


def test_clear_winner_switches():
    result = rank("q", [match("a", 0.70), match("b", 0.50)], NO_WORDS, RULES, T0)
    assert result.decision == "switch" and result.winner and result.winner.chat_id == "a"


def test_close_candidates_are_ambiguous_and_few():
    matches = [match("a", 0.60), match("b", 0.58), match("c", 0.57), match("d", 0.56), match("e", 0.31)]
    result = rank("q", matches, NO_WORDS, RULES, T0)
    assert result.decision == "ambiguous" and result.winner is None
    assert [c.chat_id for c in result.candidates] == ["a", "b", "c"]


def test_nothing_similar_enough_is_none():
    result = rank("q", [match("a", 0.29), match("b", 0.10)], NO_WORDS, RULES, T0)
    assert result.decision == "none" and [c.chat_id for c in result.candidates] == ["a", "b"]


def test_recency_breaks_a_near_tie():
    old, recent = match("old", 0.60, days_ago=300), match("new", 0.58, days_ago=0)
    result = rank("q", [old, recent], NO_WORDS, RULES, T0)
    assert result.candidates[0].chat_id == "new"
    assert result.candidates[0].recency == pytest.approx(1.0)
    assert result.candidates[1].recency == pytest.approx(0.5**10, rel=1e-3)


def test_recency_alone_cannot_make_a_chat_eligible():
    result = rank("q", [match("a", 0.29, days_ago=0)], NO_WORDS, RULES.model_copy(update={"recency_weight": 1.0}), T0)
    assert result.decision == "none"


async def test_young_chat_is_searchable_before_its_first_compaction(store, compactor, embedder, config):
    chat = (await store.create_chat()).chat
    other = (await store.create_chat(turns=make_turns(6))).chat  # another young chat, on other topics
    await compactor.compact(other.id)
    await store.append_turns(
        chat.id,
        [
            Turn.of("user", "Let's plan the fishing trip to Norway in July, salmon rivers."),
            Turn.of("model", "Norway's salmon season opens in June; the Gaula river is famous."),
        ],
    )
    await compactor.compact(chat.id)
    result = await ChatSearch(store, embedder, config).search("the chat about the salmon fishing trip")
    assert result.decision == "switch" and result.candidates[0].chat_id == chat.id


async def test_empty_request_is_refused(store, embedder, config):
    with pytest.raises(EmptyRequest, match="empty"):
        await ChatSearch(store, embedder, config).search("   ")


async def test_search_quality_on_the_hand_written_set(store, embedder, config):
    """Twelve chats and 26 spoken requests that paraphrase their topic (tests/data)."""
    names = {}
    compactor = Compactor(store, ExtractiveSummarizer(), embedder, config)
    for no, line in enumerate((DATA / "search_chats.jsonl").read_text().splitlines(), start=1):
        chat = parse_line(no, line)
        cid = chat_id_of(chat)
        names[cid] = chat.id
        await store.create_chat(chat_id=cid, created_at=chat.created_at, turns=turns_of(chat, cid))
        await compactor.compact(cid)
    search = ChatSearch(store, embedder, config)
    requests = json.loads((DATA / "search_requests.json").read_text())
    hits = decided = 0
    topical = [r for r in requests if r["expect"]]
    for r in requests:
        result = await search.search(r["request"])
        top = names[result.candidates[0].chat_id]
        if r["expect"]:
            hits += top == r["expect"]
            decided += result.decision == "switch" and top == r["expect"]
        print(
            f"{result.decision:9} top={top:18} want={r['expect']} sim={result.candidates[0].similarity:.3f} | {r['request']}"
        )
    top1 = hits / len(topical)
    print(f"search quality: top-1 {top1:.2f} ({hits}/{len(topical)}), switched correctly {decided}/{len(topical)}")
    assert top1 >= 0.8
    assert decided / len(topical) >= 0.7


def test_a_date_the_request_names_favours_the_chat_active_then():
    """Both chats match alike; the request says when, so the chat of that day is the one."""
    then, other = match("then", 0.50, days_ago=1), match("other", 0.50, days_ago=9)
    result = rank("the chat from yesterday", [other, then], NO_WORDS, RULES, T0)
    assert result.decision == "switch" and result.candidates[0].chat_id == "then"
    # the date sets one chat of the two apart: half the weight
    assert result.candidates[0].date == pytest.approx(0.2 * (1 - 1 / 2)) and result.candidates[1].date == 0


def test_rare_words_count_more_than_words_in_every_chat():
    """'melanie' is in every window, 'sunrise' in one: the chat that holds the rare word wins even
    though the other one holds the common word too and is as similar by embedding."""
    rules = RULES.model_copy(update={"words_weight": 0.5})
    counts = WordCounts(windows=100, counts={"melanie": 100, "sunrise": 1})
    words = RequestWords(["melanie", "sunrise"], counts, WordTable())
    painted = match("painted", 0.40, text="I painted the sunrise over the lake")
    named = match("named", 0.40, text="Melanie said hello to Melanie's sister Melanie")
    result = rank("when Melanie painted a sunrise", [named, painted], words, rules, T0)
    assert result.candidates[0].chat_id == "painted"
    assert result.candidates[0].matched_words == ["sunrise"] and result.candidates[1].matched_words == ["melanie"]
    assert result.candidates[0].words > 0.9 > result.candidates[1].words


def _texts(chat_id: str, *texts: tuple[str, str, MessageRange | None, float]) -> ChatMatch:
    return ChatMatch(
        chat_id,
        chat_id.upper(),
        T0,
        T0,
        tuple(TextMatch(TextRef(chat_id, kind, at), text, similarity) for kind, text, at, similarity in texts),
    )


def _turn(seq: int) -> MessageRange:
    return MessageRange(start=seq, end=seq)


# Windows of everyday talk beside the chats a test compares: they set how long a window is.
EVERYDAY = _texts(
    "everyday",
    *(("turns", f"We talked about the {w} and the weather today", _turn(i), 0.1) for i, w in enumerate(["bus", "tea"])),
)
WORDS_RULES = RULES.model_copy(update={"words_weight": 0.5})


def test_a_summary_does_not_beat_the_turn_it_summarises_by_holding_more_words():
    """Both hold "bought" and "piano" and are as similar; the summary also holds twenty-odd other
    words. Holding many words, a long text holds any word more often by chance: the turn wins."""
    counts = WordCounts(windows=50, counts={"bought": 2, "piano": 2})
    words = RequestWords(["bought", "piano"], counts, WordTable())
    filler = (
        "her sister moved to Graz, the children started school, the garden flooded in spring, "
        "the car needed new brakes, her mother visited for Easter, the cat caught a cold, "
        "and the neighbours painted their fence yellow while the rain kept falling"
    )
    summary = _texts("a-summary", ("summary_text", f"Ann bought the piano; {filler}", None, 0.5))
    turn = _texts("turn", ("turns", "I bought the piano a year ago in Vienna", _turn(3), 0.5))
    result = rank("when Ann bought the piano", [summary, turn, EVERYDAY], words, WORDS_RULES, T0)
    assert result.candidates[0].chat_id == "turn"
    assert result.candidates[0].words > result.candidates[1].words


def test_evidence_spread_over_neighbouring_turns_adds_up():
    """ "My sister helps at the food bank": one chat says "my sister" in one turn and "the food
    bank" in the next; another says "food bank" of a friend in one turn. Together the two
    neighbouring turns hold the whole request."""
    counts = WordCounts(windows=50, counts={"sister": 3, "helps": 4, "food": 3, "bank": 3})
    words = RequestWords(["sister", "helps", "food", "bank"], counts, WordTable())
    spread = _texts(
        "a-spread",
        ("turns", "My sister called me last night", _turn(4), 0.4),
        ("turns", "She helps at the food bank every week", _turn(5), 0.4),
    )
    friend = _texts("friend", ("turns", "My friend helps at the food bank on Saturdays", _turn(2), 0.4))
    result = rank("how my sister helps at the food bank", [friend, spread, EVERYDAY], words, WORDS_RULES, T0)
    assert result.candidates[0].chat_id == "a-spread"
    assert result.candidates[0].matched_range == "4-5"
    assert set(result.candidates[0].matched_words) == {"sister", "helps", "food", "bank"}
