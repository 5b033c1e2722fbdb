"""Windows of what was said: built from the turns, indexed incrementally, searchable at once."""

from __future__ import annotations

import pytest

from parla.memory.retrieval.turn_windows import WindowIndexer, turn_windows
from parla.memory.store.protocol import EmbeddedWindow
from parla.records.embedding import EmbeddedText
from parla.records.turn import MessageRange, Turn
from tests.conftest import make_turns

pytestmark = pytest.mark.tier("fast")


def numbered(n: int) -> list[Turn]:
    return [t.model_copy(update={"seq": i}) for i, t in enumerate(make_turns(n), start=1)]


def test_windows_overlap_by_one_turn_and_only_the_last_runs_short():
    turns = numbered(4)
    assert [str(w.range) for w in turn_windows(turns, 2, 1)] == ["1-2", "2-3", "3-4"]
    assert [str(w.range) for w in turn_windows(turns[:1], 2, 1)] == ["1-1"]
    assert [str(w.range) for w in turn_windows(turns, 3, 2)] == ["2-4"]
    assert turn_windows(turns, 3, 3) == []  # 3-4 would only repeat the end of 2-4
    assert turn_windows(turns, 2, 1)[0].text == f"{turns[0].text}\n{turns[1].text}"


def test_a_turn_without_text_adds_nothing_to_a_window():
    turns = numbered(3)
    turns[1] = Turn.of("model", "", seq=2, interrupted=True)
    assert [(str(w.range), w.text) for w in turn_windows(turns, 2, 1)] == [
        ("1-2", turns[0].text),
        ("2-3", turns[2].text),
    ]


async def test_indexing_writes_only_new_or_grown_windows(store, embedder):
    indexer = WindowIndexer(store, embedder, 2)
    chat = (await store.create_chat(turns=make_turns(1))).chat
    assert await indexer.index(chat.id) == 1  # 1-1, short
    await store.append_turns(chat.id, make_turns(3, start=1))
    assert await indexer.index(chat.id) == 3  # 1-2 grown in place, 2-3, 3-4
    assert await indexer.index(chat.id) == 0  # nothing new: nothing embedded
    await store.append_turns(chat.id, make_turns(1, start=4))
    assert await indexer.index(chat.id) == 1  # 4-5 only
    texts = [t for t in await store.embedded_texts() if t.ref.kind == "turns"]
    assert sorted(str(t.ref.range) for t in texts) == ["1-2", "2-3", "3-4", "4-5"]
    counts = await store.word_counts([])
    assert counts.windows == 4


async def test_every_chat_is_indexed_once(store, embedder):
    for _ in range(3):
        await store.create_chat(turns=make_turns(4))
    indexer = WindowIndexer(store, embedder, 2)
    seen: list[tuple[int, int]] = []
    assert await indexer.index_every_chat(lambda done, total: seen.append((done, total))) == 9
    assert seen[-1] == (3, 3)
    assert await indexer.index_every_chat() == 0


async def test_the_first_search_after_a_write_sees_it_without_a_rebuild(store, embedder):
    chat = (await store.create_chat(turns=make_turns(2))).chat
    vector = (await embedder.embed(["sunrise painting by the lake"], "document"))[0]
    window = EmbeddedWindow(
        MessageRange(start=1, end=2), EmbeddedText("sunrise painting by the lake", vector, embedder.name)
    )
    await store.upsert_windows(chat.id, [window])
    query = EmbeddedText("q", vector, embedder.name)
    assert (await store.search(query, 5))[0].chat_id == chat.id
    other = (await store.create_chat(turns=make_turns(2))).chat
    await store.upsert_windows(other.id, [window])
    found = await store.search(query, 5)
    assert {m.chat_id for m in found} == {chat.id, other.id}
    await store.delete_chat(chat.id)
    assert [m.chat_id for m in await store.search(query, 5)] == [other.id]
