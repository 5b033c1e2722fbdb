"""The SQLite store against the ChatStore semantics."""

from __future__ import annotations

import asyncio
import sqlite3

import numpy as np
import pytest

from memory.embedding import EmbeddedText
from memory.pins import Pin
from memory.store import ChatNotFound, CompactionCommit, EmbedderMismatch, StoreError, TurnConflict
from memory.store.sqlite import SQLiteChatStore
from memory.summary import MessageRange, SummaryLevel
from memory.turn import Turn
from tests.conftest import T0, make_turns


def vec(seed: int, dim: int = 8) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=dim).astype(np.float32)
    return v / np.linalg.norm(v)


def emb(text: str, seed: int, dim: int = 8, name: str = "test-8") -> EmbeddedText:
    return EmbeddedText(text, vec(seed, dim), name)


async def test_append_assigns_sequence_and_is_idempotent(store):
    chat = (await store.create_chat(title="t", created_at=T0)).chat
    turns = make_turns(5)
    first = await store.append_turns(chat.id, turns[:3])
    assert [t.seq for t in first.turns] == [1, 2, 3] and first.added == 3
    again = await store.append_turns(chat.id, turns)  # 3 known + 2 new
    assert [t.seq for t in again.turns] == [1, 2, 3, 4, 5] and again.added == 2
    history = await store.load_history(chat.id)
    assert [t.id for t in history.full_history] == [t.id for t in turns]
    assert history.chat.turn_count == 5
    assert history.chat.last_activity_at == turns[-1].created_at


async def test_append_is_atomic(store):
    chat = (await store.create_chat()).chat
    good = make_turns(2)
    with pytest.raises(StoreError, match="twice"):
        await store.append_turns(chat.id, [*good, good[0]])
    assert (await store.get_chat(chat.id)).turn_count == 0
    other = (await store.create_chat()).chat
    await store.append_turns(other.id, good[:1])
    with pytest.raises(TurnConflict):
        await store.append_turns(chat.id, [good[1], good[0]])
    assert await store.load_turns(chat.id) == []


async def test_turn_round_trip_keeps_every_field(store):
    chat = (await store.create_chat()).chat
    turn = Turn.of(
        "model", "Hello — ça va? 日本", thinking="hm", interrupted=True, source="voice", model_variant="live-x"
    )
    await store.append_turns(chat.id, [turn])
    (loaded,) = await store.load_turns(chat.id)
    assert loaded == turn.model_copy(update={"seq": 1})
    assert loaded.seed_shape() == {"role": "model", "parts": [{"text": "Hello — ça va? 日本"}], "thinking": "hm"}


async def test_create_with_existing_id_appends_idempotently(store):
    turns = make_turns(4)
    created = await store.create_chat(chat_id="c1", title="x", turns=turns[:2])
    assert created.added == 2
    again = await store.create_chat(chat_id="c1", title="ignored", turns=turns)
    assert again.added == 2 and again.chat.title == "x" and again.chat.turn_count == 4


async def test_unknown_chat(store):
    with pytest.raises(ChatNotFound, match="parla chats"):
        await store.append_turns("nope", make_turns(1))


async def test_compaction_commit_refuses_a_stale_version_and_keeps_new_turns(store):
    chat = (await store.create_chat(turns=make_turns(20))).chat
    commit = CompactionCommit(chat.id, chat.compaction_version, 8, "summary one", emb("summary one", 1), "Title")
    await store.append_turns(chat.id, make_turns(2, start=20))  # arrives while compacting
    applied = await store.commit_compaction(commit)
    assert applied is not None and applied.summarized_through == 8 and applied.turn_count == 22
    assert applied.title == "Title" and applied.compaction_version == chat.compaction_version + 1
    stale = await store.commit_compaction(commit)
    assert stale is None
    history = await store.load_history(chat.id)
    assert [t.seq for t in history.tail] == list(range(9, 23))
    assert history.assistant_history[0].text.endswith("summary one")
    assert history.assistant_history[1:] == history.tail


async def test_commit_cannot_summarise_past_the_last_turn(store):
    chat = (await store.create_chat(turns=make_turns(3))).chat
    commit = CompactionCommit(chat.id, 0, 5, "s", emb("s", 1))
    assert await store.commit_compaction(commit) is None


async def test_summaries_and_facts_upsert_per_range(store):
    chat = (await store.create_chat(turns=make_turns(20))).chat
    rng = MessageRange(start=1, end=10)
    await store.upsert_summary(chat.id, SummaryLevel.CHUNK, rng, emb("first", 1))
    await store.upsert_summary(chat.id, SummaryLevel.CHUNK, rng, emb("second", 2))
    await store.upsert_facts(chat.id, rng, ["a fact"], emb("- a fact", 3))
    await store.upsert_facts(chat.id, rng, ["a fact", "another"], emb("- a fact\n- another", 4))
    await store.upsert_facts(chat.id, MessageRange(start=11, end=20), [], None)
    assert [s.text for s in await store.list_summaries(chat.id)] == ["second"]
    facts = await store.list_facts(chat.id)
    assert [f.lines for f in facts] == [["a fact", "another"], []]
    with pytest.raises(StoreError, match="embedding of exactly their text"):
        await store.upsert_facts(chat.id, rng, ["x"], emb("- y", 5))


async def test_embedder_mismatch_is_refused_until_reembedded(store):
    chat = (await store.create_chat(turns=make_turns(10))).chat
    await store.upsert_summary(chat.id, SummaryLevel.CHUNK, MessageRange(start=1, end=10), emb("s", 1))
    with pytest.raises(EmbedderMismatch, match="parla memory reembed"):
        await store.upsert_summary(
            chat.id, SummaryLevel.META, MessageRange(start=1, end=10), emb("m", 2, dim=16, name="other-16")
        )
    with pytest.raises(EmbedderMismatch):
        await store.search(emb("q", 1, dim=16, name="other-16"), 5)
    with pytest.raises(EmbedderMismatch, match="embedded by other-8"):
        await store.search(emb("q", 1, name="other-8"), 5)  # same size, another model
    texts = await store.embedded_texts()
    with pytest.raises(StoreError, match="old vectors"):
        await store.replace_embeddings([], "other-16")
    await store.replace_embeddings([(t.ref, vec(9, 16)) for t in texts], "other-16")
    assert await store.embedder_info() == ("other-16", 16)
    (match,) = await store.search(emb("q", 9, dim=16, name="other-16"), 5)
    assert match.similarity == pytest.approx(1.0, abs=1e-5)


async def test_search_returns_each_chats_best_text(store):
    a = (await store.create_chat(title="A", turns=make_turns(10))).chat
    b = (await store.create_chat(title="B", turns=make_turns(10))).chat
    await store.set_description(a.id, emb("about a", 1), 0)
    await store.upsert_facts(a.id, MessageRange(start=1, end=10), ["fact of a"], emb("- fact of a", 2))
    await store.set_description(b.id, emb("about b", 3), 0)
    matches = await store.search(emb("q", 2), 10)
    assert [m.chat_id for m in matches][0] == a.id
    assert matches[0].matched.kind == "facts" and matches[0].matched_text == "- fact of a"
    assert matches[0].similarity == pytest.approx(1.0, abs=1e-5)
    assert {m.chat_id for m in matches} == {a.id, b.id}
    # A write in another process shows up in the next search (generation check).
    async with SQLiteChatStore(store.path) as other:
        await other.set_description(b.id, emb("about b, changed", 2), 0)
    assert {round(m.similarity, 4) for m in await store.search(emb("q", 2), 10)} == {1.0}
    await store.delete_chat(a.id)
    assert [m.chat_id for m in await store.search(emb("q", 2), 10)] == [b.id]


async def test_find_chats_by_id_prefix_and_title(store):
    chat = (await store.create_chat(chat_id="abcdef12-0000", title="Japan trip")).chat
    await store.create_chat(chat_id="abcdef99-0000", title="Other")
    assert [c.id for c in await store.find_chats("japan TRIP")] == [chat.id]
    assert [c.id for c in await store.find_chats("abcdef12")] == [chat.id]
    assert len(await store.find_chats("abcdef")) == 2
    assert await store.find_chats("abc") == []  # too short for a prefix


async def test_pins_crud_and_stats(store):
    chat = (await store.create_chat(turns=make_turns(3))).chat
    low = await store.add_pin(Pin(chat_id=chat.id, content="likes tea", importance=2))
    await store.add_pin(Pin(chat_id=chat.id, content="allergic to penicillin", importance=10, pin_type="auto"))
    assert [p.content for p in await store.list_pins(chat.id)] == ["allergic to penicillin", "likes tea"]
    stats = await store.stats()
    assert (stats.total_chats, stats.total_messages, stats.total_pins, stats.average_importance) == (1, 3, 2, 6.0)
    await store.delete_pin(low.id)
    with pytest.raises(StoreError):
        await store.delete_pin(low.id)
    with pytest.raises(ValueError):
        Pin(chat_id=chat.id, content="x", importance=11)


async def test_delete_cascades(store):
    chat = (await store.create_chat(turns=make_turns(10))).chat
    await store.upsert_summary(chat.id, SummaryLevel.CHUNK, MessageRange(start=1, end=10), emb("s", 1))
    await store.add_pin(Pin(chat_id=chat.id, content="p"))
    await store.delete_chat(chat.id)
    stats = await store.stats()
    assert (stats.total_chats, stats.total_messages, stats.total_summaries, stats.total_pins) == (0, 0, 0, 0)


async def test_two_processes_appending_lose_nothing(tmp_path):
    path = tmp_path / "shared.db"
    async with SQLiteChatStore(path) as a, SQLiteChatStore(path) as b:
        chat = (await a.create_chat()).chat
        left, right = make_turns(40, prefix="L"), make_turns(40, prefix="R")

        async def feed(store, turns):
            for t in turns:
                await store.append_turns(chat.id, [t])

        await asyncio.gather(feed(a, left), feed(b, right))
        history = await a.load_history(chat.id)
    assert sorted(t.id for t in history.full_history) == sorted(t.id for t in left + right)
    assert [t.seq for t in history.full_history] == list(range(1, 81))
    # Each writer's own order is kept.
    assert [t.id for t in history.full_history if t.text.startswith("L")] == [t.id for t in left]


async def test_reopen_keeps_data_and_rejects_newer_schema(tmp_path):
    path = tmp_path / "p.db"
    async with SQLiteChatStore(path) as s:
        chat = (await s.create_chat(turns=make_turns(2))).chat
    async with SQLiteChatStore(path) as s:
        assert (await s.get_chat(chat.id)).turn_count == 2
    with sqlite3.connect(path) as raw:
        raw.execute("PRAGMA user_version = 99")
    with pytest.raises(StoreError, match="upgrade Parla"):
        async with SQLiteChatStore(path):
            pass
