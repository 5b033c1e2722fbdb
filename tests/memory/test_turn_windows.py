"""Windows of what was said: built from the turns, indexed incrementally, searchable at once."""

from __future__ import annotations

import numpy as np
import pytest

from parla.memory.embedding import EmbeddedText
from parla.memory.store import EmbeddedWindow, TextRef
from parla.memory.store.sqlite_index import VectorIndex
from parla.memory.turn import MessageRange, Turn
from parla.memory.turn_windows import WindowIndexer, turn_windows
from tests.conftest import make_turns


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


def blob(seed: int, dim: int = 4) -> bytes:
    v = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
    return (v / np.linalg.norm(v)).tobytes()


def ref(chat: str, start: int) -> TextRef:
    return TextRef(chat, "turns", MessageRange(start=start, end=start + 1))


# A row's similarity is a float32 dot product whose last bits depend on the row's place in the
# matrix and the CPU's vector width (BLAS blocks rows differently): a few float32 ulps apart for
# unit vectors, far below any gap between two texts' similarities that ranks them.
SIMILARITY_TOLERANCE = 1e-5


def assert_same_results(
    got: list[tuple[str, list[tuple[TextRef, float]]]], want: list[tuple[str, list[tuple[TextRef, float]]]]
) -> None:
    """The same chats in the same order, each with the same texts in the same order; similarities
    equal within the tolerance."""
    assert [(chat, [r for r, _ in texts]) for chat, texts in got] == [
        (chat, [r for r, _ in texts]) for chat, texts in want
    ]
    for (_, got_texts), (_, want_texts) in zip(got, want, strict=True):
        assert [s for _, s in got_texts] == pytest.approx([s for _, s in want_texts], abs=SIMILARITY_TOLERANCE)


def test_the_index_replaces_one_chat_and_matches_a_fresh_build():
    rows = {c: [(ref(c, i), blob(10 * n + i)) for i in range(1, 4)] for n, c in enumerate("abcdef")}
    index = VectorIndex.build(1, [r for c in "abcdef" for r in rows[c]], 4)
    rows["b"] = [(ref("b", i), blob(100 + i)) for i in range(1, 6)]  # b grew and changed
    del rows["d"]  # d was deleted
    index.replace_chats(["b", "d"], rows["b"], 2)
    fresh = VectorIndex.build(2, [r for c in "abcef" for r in rows[c]], 4)
    for seed in range(20):
        query = np.frombuffer(blob(1000 + seed), dtype=np.float32)
        assert_same_results(index.best_per_chat(query, 5, 2), fresh.best_per_chat(query, 5, 2))
    assert all(chat != "d" for chat, _ in index.best_per_chat(query, 10, 1))


async def test_the_first_search_after_a_write_sees_it_without_a_rebuild(store, embedder):
    chat = (await store.create_chat(turns=make_turns(2))).chat
    vector = (await embedder.embed(["sunrise painting by the lake"], "document"))[0]
    window = EmbeddedWindow(
        MessageRange(start=1, end=2), EmbeddedText("sunrise painting by the lake", vector, embedder.name)
    )
    await store.upsert_windows(chat.id, [window])
    query = EmbeddedText("q", vector, embedder.name)
    assert (await store.search(query, 5))[0].chat_id == chat.id
    built = store._index
    other = (await store.create_chat(turns=make_turns(2))).chat
    await store.upsert_windows(other.id, [window])
    found = await store.search(query, 5)
    assert store._index is built  # patched in place: only the changed chat was read
    assert {m.chat_id for m in found} == {chat.id, other.id}
    await store.delete_chat(chat.id)
    assert [m.chat_id for m in await store.search(query, 5)] == [other.id]
