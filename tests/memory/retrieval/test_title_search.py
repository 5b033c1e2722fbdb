"""A chat's title is one of its searchable texts, on both stores: embedded with its plain text,
its words counted like a window's, dropped in the transaction that changes the title and embedded
again, so a chat is found by the name it has now and never by the one it had."""

from __future__ import annotations

import pytest

from parla.memory.config import MemoryConfig
from parla.memory.retrieval.search import ChatSearch
from parla.memory.retrieval.turn_windows import WindowIndexer, rename_chat
from parla.records.turn import Turn

pytestmark = pytest.mark.tier("fast")

CHATS = {
    "Gift ideas for Mom's 60th birthday": [
        "My mom turns 60 next month. She loves gardening and jazz. Any ideas?",
        "How about a Japanese pruning set, or tickets to a jazz brunch?",
    ],
    "Sourdough timing": [
        "What is the bake time for a sourdough boule?",
        "Bake it 20 minutes covered at 250 degrees, then 25 uncovered.",
    ],
    "Guitar practice plan": [
        "I have 20 minutes a day. How should I practise guitar?",
        "Five minutes of scales, ten of chord changes, five of a song you love.",
    ],
}


async def test_a_chat_is_found_by_its_title_and_by_its_new_name_only(any_store, embedder):
    indexer = WindowIndexer(any_store, embedder, 2)
    ids = {}
    for title, (asked, answered) in CHATS.items():
        turns = [Turn.of("user", asked), Turn.of("model", answered)]
        ids[title] = (await any_store.create_chat(title=title, turns=turns)).chat.id
        assert await indexer.index(ids[title]) == 2  # the title and the one window
        assert await indexer.index(ids[title]) == 0
    search = ChatSearch(any_store, embedder, MemoryConfig())

    # no turn says "birthday": only the title does
    found = await search.search("the birthday chat")
    assert found.decision == "switch" and found.candidates[0].title == "Gift ideas for Mom's 60th birthday"
    top = found.candidates[0]
    assert (top.matched_kind, top.matched_range, top.matched_text) == ("title", None, top.title)
    assert "birthday" in top.matched_words
    counts = await any_store.word_counts(["birthday"])
    assert counts.counts == {"birthday": 1} and counts.windows == 6

    bread = ids["Sourdough timing"]
    await any_store.rename_chat(bread, "Weekend baking plans")
    # the old title is gone with the rename itself, before anything embeds the new one
    assert await any_store.window_text(bread, 0) is None
    assert (await any_store.word_counts(["timing"])).counts == {}
    renamed = await rename_chat(any_store, embedder, bread, "Weekend baking plans")
    assert renamed.title == "Weekend baking plans" and await any_store.window_text(bread, 0) == "Weekend baking plans"
    found = await search.search("my weekend baking plans")
    assert found.candidates[0].chat_id == bread and found.candidates[0].matched_kind == "title"
    assert all(c.matched_text != "Sourdough timing" for c in (await search.search("sourdough timing")).candidates)
