"""The ChatStore contract: every test runs on the SQLite store and on the Supabase store (real
Postgres + pgvector behind the PostgREST shim, signed in as a user), so what the core relies on
behaves the same on both."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from parla.memory.errors import ChatNotFound, EmbedderMismatch, StoreError, TurnConflict
from parla.memory.language.importance import turn_importance
from parla.memory.store.protocol import (
    ChatStore,
    CompactionCommit,
    EmbeddedWindow,
    PendingWrites,
    QueueState,
    TextRef,
    WordCounts,
)
from parla.memory.store.sqlite.store import SQLiteChatStore
from parla.records.chat import MAX_TITLE_CHARS
from parla.records.embedding import EmbeddedText
from parla.records.pins import Pin
from parla.records.summary import SummaryLevel
from parla.records.turn import MessageRange, TokenUsage, Turn, WebSource
from tests.conftest import T0, make_turns, signed_in_store

pytestmark = pytest.mark.tier("fast")

C1 = "0c1c1c1c-0000-4000-8000-000000000001"
ABC12 = "abcdef12-0000-4000-8000-000000000000"
ABC99 = "abcdef99-0000-4000-8000-000000000000"


def vec(seed: int, dim: int = 8) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=dim).astype(np.float32)
    return v / np.linalg.norm(v)


# the SQLite store keeps vectors at half precision (sqlite_rows.VECTOR_DTYPE): a similarity of unit
# vectors is within 2^-11 of float32's
HALF_PRECISION = 1e-3


def emb(text: str, seed: int, dim: int = 8, name: str = "test-8") -> EmbeddedText:
    return EmbeddedText(text, vec(seed, dim), name)


async def test_append_assigns_sequence_and_is_idempotent(any_store):
    chat = (await any_store.create_chat(title="t", created_at=T0)).chat
    turns = make_turns(5)
    first = await any_store.append_turns(chat.id, turns[:3])
    assert [t.seq for t in first.turns] == [1, 2, 3] and first.added == 3
    again = await any_store.append_turns(chat.id, turns)  # 3 known + 2 new
    assert [t.seq for t in again.turns] == [1, 2, 3, 4, 5] and again.added == 2
    history = await any_store.load_history(chat.id)
    assert [t.id for t in history.full_history] == [t.id for t in turns]
    assert history.chat.turn_count == 5
    assert history.chat.last_activity_at == turns[-1].created_at


async def test_append_is_atomic(any_store):
    chat = (await any_store.create_chat()).chat
    good = make_turns(2)
    with pytest.raises(StoreError, match="twice"):
        await any_store.append_turns(chat.id, [*good, good[0]])
    assert (await any_store.get_chat(chat.id)).turn_count == 0
    other = (await any_store.create_chat()).chat
    await any_store.append_turns(other.id, good[:1])
    with pytest.raises(TurnConflict):
        await any_store.append_turns(chat.id, [good[1], good[0]])
    assert await any_store.load_turns(chat.id) == []


async def test_turn_round_trip_keeps_every_field(any_store):
    chat = (await any_store.create_chat()).chat
    turn = Turn.of(
        "model",
        "Hello — ça va? 日本",
        thinking="hm",
        interrupted=True,
        source="voice",
        model_variant="live-x",
        usage=TokenUsage(prompt_tokens=812, response_tokens=64, total_tokens=876, cached_tokens=500),
        sources=[
            WebSource(title="meteo.it", uri="https://vertexaisearch.cloud.google.com/grounding-api-redirect/AbC"),
            WebSource(title="Il Meteo — Torino", uri="https://example.org/torino?giorno=domani&x=1"),
        ],
    )
    plain = Turn.of("user", "no usage on a user's turn")
    await any_store.append_turns(chat.id, [turn, plain])
    loaded, loaded_plain = await any_store.load_turns(chat.id)
    assert loaded == turn.model_copy(update={"seq": 1, "importance": turn_importance(turn)})
    assert loaded_plain.usage is None and loaded_plain.sources == []
    # the history the model and the inspector read carries them too
    assert (await any_store.load_history(chat.id)).full_history[0].sources == turn.sources
    assert loaded.wire_shape() == {"role": "model", "parts": [{"text": "Hello — ça va? 日本"}], "thinking": "hm"}


async def test_create_with_existing_id_appends_idempotently(any_store):
    turns = make_turns(4)
    created = await any_store.create_chat(chat_id=C1, title="x", turns=turns[:2])
    assert created.added == 2
    again = await any_store.create_chat(chat_id=C1, title="ignored", turns=turns)
    assert again.added == 2 and again.chat.title == "x" and again.chat.turn_count == 4


async def test_unknown_chat(any_store):
    with pytest.raises(ChatNotFound, match="parla chats"):
        await any_store.append_turns("nope", make_turns(1))


async def test_compaction_commit_refuses_a_stale_version_and_keeps_new_turns(any_store):
    chat = (await any_store.create_chat(turns=make_turns(20))).chat
    commit = CompactionCommit(chat.id, chat.compaction_version, 8, "summary one", emb("summary one", 1), "Title")
    await any_store.append_turns(chat.id, make_turns(2, start=20))  # arrives while compacting
    applied = await any_store.commit_compaction(commit)
    assert applied is not None and applied.summarized_through == 8 and applied.turn_count == 22
    assert applied.title == "Title" and applied.compaction_version == chat.compaction_version + 1
    stale = await any_store.commit_compaction(commit)
    assert stale is None
    history = await any_store.load_history(chat.id)
    assert [t.seq for t in history.tail] == list(range(9, 23))
    assert history.assistant_history[0].text.endswith("summary one")
    assert history.assistant_history[1:] == history.tail


async def test_commit_cannot_summarise_past_the_last_turn(any_store):
    chat = (await any_store.create_chat(turns=make_turns(3))).chat
    commit = CompactionCommit(chat.id, 0, 5, "s", emb("s", 1))
    assert await any_store.commit_compaction(commit) is None


async def test_summaries_and_facts_upsert_per_range(any_store):
    chat = (await any_store.create_chat(turns=make_turns(20))).chat
    rng = MessageRange(start=1, end=10)
    await any_store.upsert_summary(chat.id, SummaryLevel.CHUNK, rng, emb("first", 1))
    await any_store.upsert_summary(chat.id, SummaryLevel.CHUNK, rng, emb("second", 2))
    await any_store.upsert_facts(chat.id, rng, ["a fact"], emb("- a fact", 3))
    await any_store.upsert_facts(chat.id, rng, ["a fact", "another"], emb("- a fact\n- another", 4))
    await any_store.upsert_facts(chat.id, MessageRange(start=11, end=20), [], None)
    assert [s.text for s in await any_store.list_summaries(chat.id)] == ["second"]
    facts = await any_store.list_facts(chat.id)
    assert [f.lines for f in facts] == [["a fact", "another"], []]
    with pytest.raises(StoreError, match="embedding of exactly their text"):
        await any_store.upsert_facts(chat.id, rng, ["x"], emb("- y", 5))


async def test_embedder_mismatch_is_refused_until_reembedded(any_store):
    chat = (await any_store.create_chat(turns=make_turns(10))).chat
    await any_store.upsert_summary(chat.id, SummaryLevel.CHUNK, MessageRange(start=1, end=10), emb("s", 1))
    with pytest.raises(EmbedderMismatch, match="parla memory reembed"):
        await any_store.upsert_summary(
            chat.id, SummaryLevel.META, MessageRange(start=1, end=10), emb("m", 2, dim=16, name="other-16")
        )
    with pytest.raises(EmbedderMismatch):
        await any_store.search(emb("q", 1, dim=16, name="other-16"), 5)
    with pytest.raises(EmbedderMismatch, match="embedded by other-8"):
        await any_store.search(emb("q", 1, name="other-8"), 5)  # same size, another model
    texts = await any_store.embedded_texts()
    with pytest.raises(StoreError, match="old vectors"):
        await any_store.replace_embeddings([], "other-16")
    await any_store.replace_embeddings([(t.ref, vec(9, 16)) for t in texts], "other-16")
    assert await any_store.embedder_info() == ("other-16", 16)
    (match,) = await any_store.search(emb("q", 9, dim=16, name="other-16"), 5)
    assert match.similarity == pytest.approx(1.0, abs=HALF_PRECISION)


async def test_search_returns_each_chats_best_text(any_store):
    a = (await any_store.create_chat(title="A", turns=make_turns(10))).chat
    b = (await any_store.create_chat(title="B", turns=make_turns(10))).chat
    await any_store.set_summary_text(a.id, emb("about a", 1), 0)
    await any_store.upsert_facts(a.id, MessageRange(start=1, end=10), ["fact of a"], emb("- fact of a", 2))
    await any_store.set_summary_text(b.id, emb("about b", 3), 0)
    matches = await any_store.search(emb("q", 2), 10)
    assert matches[0].chat_id == a.id
    assert matches[0].texts[0].ref.kind == "facts" and matches[0].texts[0].text == "- fact of a"
    assert matches[0].similarity == pytest.approx(1.0, abs=1e-5)
    assert {m.chat_id for m in matches} == {a.id, b.id} and len(matches[0].texts) == 1
    (both,) = [m for m in await any_store.search(emb("q", 2), 10, texts_per_chat=5) if m.chat_id == a.id]
    assert [t.ref.kind for t in both.texts] == ["facts", "summary_text"]
    assert both.texts[0].similarity >= both.texts[1].similarity
    await any_store.delete_chat(a.id)
    assert [m.chat_id for m in await any_store.search(emb("q", 2), 10)] == [b.id]


def window(start: int, end: int, text: str, seed: int) -> EmbeddedWindow:
    return EmbeddedWindow(MessageRange(start=start, end=end), emb(text, seed))


async def test_windows_are_stored_by_first_turn_and_counted_by_word(any_store):
    a = (await any_store.create_chat(turns=make_turns(3))).chat
    b = (await any_store.create_chat(turns=make_turns(3))).chat
    assert await any_store.window_frontier(a.id, 2) == 1
    await any_store.upsert_windows(a.id, [window(1, 2, "Melanie painted a sunrise", 1)])
    await any_store.upsert_windows(a.id, [window(2, 2, "Melanie likes tea", 2)])  # short: the chat's end
    assert await any_store.window_frontier(a.id, 2) == 2
    await any_store.upsert_windows(a.id, [window(2, 3, "Melanie likes green tea", 3)])  # grown in place
    assert await any_store.window_frontier(a.id, 2) == 3
    await any_store.upsert_windows(b.id, [window(1, 2, "Melanie went hiking", 4)])
    counts = await any_store.word_counts(["melanie", "tea", "sunrise", "green", "likes", "nowhere"])
    assert counts == WordCounts(windows=3, counts={"melanie": 3, "tea": 1, "sunrise": 1, "green": 1, "likes": 1})
    (match,) = [m for m in await any_store.search(emb("q", 3), 5, texts_per_chat=2) if m.chat_id == a.id]
    assert match.texts[0].ref == TextRef(a.id, "turns", MessageRange(start=2, end=3))
    assert match.texts[0].text == "Melanie likes green tea"
    assert {t.text for t in await any_store.embedded_texts()} >= {"Melanie went hiking", "Melanie painted a sunrise"}
    await any_store.delete_chat(a.id)
    assert await any_store.word_counts(["melanie", "tea"]) == WordCounts(windows=1, counts={"melanie": 1})
    with pytest.raises(ChatNotFound):
        await any_store.window_frontier(a.id, 2)


@pytest.mark.tier("postgres")
async def test_search_ranks_alike_on_both_stores(supabase, tmp_path):
    """The same data gives the same chats, texts and order on both stores."""
    results = []
    async with SQLiteChatStore(tmp_path / "parla.db") as local, await signed_in_store(supabase, tmp_path) as remote:
        for store in (local, remote):
            results.append(await _ranking(store))
    (local_order, local_sims), (remote_order, remote_sims) = results
    assert local_order == remote_order and len(local_order) == 4
    assert local_sims == pytest.approx(remote_sims, abs=HALF_PRECISION)


async def _ranking(store: ChatStore) -> tuple[list[object], list[float]]:
    for n in range(6):
        chat = (await store.create_chat(title=f"chat {n}", created_at=T0, turns=make_turns(4))).chat
        await store.set_summary_text(chat.id, emb(f"about {n}", 10 + n), 0)
        await store.upsert_windows(chat.id, [window(i, i + 1, f"window {n}.{i}", 20 + 3 * n + i) for i in (1, 2, 3)])
    matches = await store.search(emb("q", 25), 4, texts_per_chat=3)
    return (
        [(m.title, [(t.ref.kind, t.ref.range) for t in m.texts]) for m in matches],
        [t.similarity for m in matches for t in m.texts],
    )


async def test_find_chats_by_id_prefix_and_title(any_store):
    chat = (await any_store.create_chat(chat_id=ABC12, title="Japan trip")).chat
    await any_store.create_chat(chat_id=ABC99, title="Other")
    assert [c.id for c in await any_store.find_chats("japan TRIP")] == [chat.id]
    assert [c.id for c in await any_store.find_chats("abcdef12")] == [chat.id]
    assert len(await any_store.find_chats("abcdef")) == 2
    assert await any_store.find_chats("abc") == []  # too short for a prefix


async def test_find_chats_takes_like_wildcards_literally(any_store):
    # "%%%%" named every chat and "a%%%" a chat by its first character (issue 25, item 13)
    await any_store.create_chat(chat_id=ABC12, title="Japan trip")
    await any_store.create_chat(chat_id=ABC99, title="a_c%")
    for ref in ("%%%%", "a%%%", "abc%", "a___", "abcd%", "abcdef1_", "\\%%%"):
        assert await any_store.find_chats(ref) == [], ref
    assert [c.id for c in await any_store.find_chats("A_C%")] == [ABC99]  # a title is matched whole


async def test_titles_are_capped(any_store):
    # a 60,000-character title was kept and printed whole by `parla status` (issue 25, item 17)
    chat = (await any_store.create_chat(title="Trip " * 12_000)).chat
    assert len(chat.title) == MAX_TITLE_CHARS and chat.title.endswith("Trip…")
    assert (await any_store.get_chat(chat.id)).title == chat.title
    renamed = await any_store.rename_chat(chat.id, "x" * 1000)
    assert renamed.title == "x" * (MAX_TITLE_CHARS - 1) + "…" == (await any_store.get_chat(chat.id)).title


async def test_find_chats_puts_an_exact_id_first_in_any_case(any_store):
    chat = (await any_store.create_chat(chat_id=ABC12)).chat
    await any_store.create_chat(chat_id=C1, title=ABC12.upper())  # a title that spells the other's id
    assert [c.id for c in await any_store.find_chats(ABC12)] == [chat.id]
    assert [c.id for c in await any_store.find_chats(ABC12.upper())] == [chat.id]


async def test_pending_writes_and_flush_when_nothing_waits(any_store):
    await any_store.create_chat(turns=make_turns(2))
    assert await any_store.flush() == 0
    assert await any_store.pending_writes() == PendingWrites()


async def test_pins_crud_and_stats(any_store):
    chat = (await any_store.create_chat(turns=make_turns(3))).chat
    low = await any_store.add_pin(Pin(chat_id=chat.id, content="likes tea", importance=2))
    await any_store.add_pin(Pin(chat_id=chat.id, content="allergic to penicillin", importance=10, pin_type="auto"))
    assert [p.content for p in await any_store.list_pins(chat.id)] == ["allergic to penicillin", "likes tea"]
    stats = await any_store.stats()
    assert (stats.total_chats, stats.total_messages, stats.total_pins, stats.average_importance) == (1, 3, 2, 6.0)
    await any_store.delete_pin(low.id)
    with pytest.raises(StoreError):
        await any_store.delete_pin(low.id)
    with pytest.raises(ValueError):
        Pin(chat_id=chat.id, content="x", importance=11)


async def test_generated_titles_never_replace_a_users_title(any_store):
    mine = (await any_store.create_chat(title="Mine", turns=make_turns(2))).chat
    bare = (await any_store.create_chat(turns=make_turns(2))).chat
    assert await any_store.set_summary_text(mine.id, emb("d", 1), 0, title="Generated")
    assert await any_store.set_summary_text(bare.id, emb("d", 2), 0, title="First guess")
    assert ((await any_store.get_chat(mine.id)).title, (await any_store.get_chat(mine.id)).title_generated) == (
        "Mine",
        False,
    )
    bare = await any_store.get_chat(bare.id)
    assert (bare.title, bare.title_generated) == ("First guess", True)
    commit = CompactionCommit(
        chat_id=bare.id, expected_version=0, summarized_through=1, rolling_summary="r", summary_text=emb("r", 3)
    )
    kept = await any_store.commit_compaction(commit)  # no title given: the generated one stays
    assert kept is not None and (kept.title, kept.title_generated) == ("First guess", True)
    refreshed = await any_store.commit_compaction(
        CompactionCommit(
            chat_id=bare.id,
            expected_version=1,
            summarized_through=2,
            rolling_summary="r2",
            summary_text=emb("r2", 4),
            title="Refreshed",
        )
    )
    assert refreshed is not None and refreshed.title == "Refreshed"
    renamed = await any_store.rename_chat(bare.id, "My name for it")
    assert (renamed.title, renamed.title_generated) == ("My name for it", False)
    assert await any_store.set_summary_text(bare.id, emb("d", 5), 2, title="Generated again")
    assert (await any_store.get_chat(bare.id)).title == "My name for it"


async def test_forgotten_pins_leave_the_listing_and_come_back(any_store):
    chat = (await any_store.create_chat(turns=make_turns(3))).chat
    tea = await any_store.add_pin(Pin(chat_id=chat.id, content="likes tea", importance=2))
    await any_store.add_pin(Pin(chat_id=chat.id, content="allergic to penicillin", importance=10))
    gone = await any_store.set_pin_forgotten(tea.id, True)
    assert gone.forgotten_at is not None and gone.content == "likes tea"
    assert [p.content for p in await any_store.list_pins(chat.id)] == ["allergic to penicillin"]
    assert [p.id for p in await any_store.list_pins(chat.id, forgotten=True)] == [tea.id]
    stats = await any_store.stats()
    assert (stats.total_pins, stats.average_importance) == (1, 10.0)
    back = await any_store.set_pin_forgotten(tea.id, False)
    assert back.forgotten_at is None
    assert len(await any_store.list_pins(chat.id)) == 2 and await any_store.list_pins(chat.id, forgotten=True) == []
    with pytest.raises(StoreError, match="no pin"):
        await any_store.set_pin_forgotten("9d9d9d9d-0000-4000-8000-000000000009", True)


async def test_forgotten_fact_lines_survive_a_regeneration(any_store):
    chat = (await any_store.create_chat(turns=make_turns(10))).chat
    rng = MessageRange(start=1, end=10)
    await any_store.upsert_facts(chat.id, rng, ["a", "b"], emb("- a\n- b", 1))
    changed = await any_store.set_fact_lines(chat.id, rng, ["a"], ["b"], emb("- a", 2))
    assert (changed.lines, changed.forgotten) == (["a"], ["b"])
    await any_store.upsert_facts(chat.id, rng, ["a", "c"], emb("- a\n- c", 3))  # a regeneration
    (block,) = await any_store.list_facts(chat.id)
    assert (block.lines, block.forgotten) == (["a", "c"], ["b"])
    emptied = await any_store.set_fact_lines(chat.id, rng, [], ["b", "a", "c"], None)
    assert emptied.lines == [] and (await any_store.stats()).total_facts == 0
    with pytest.raises(StoreError, match="embedding"):
        await any_store.set_fact_lines(chat.id, rng, ["a"], [], None)
    with pytest.raises(StoreError, match="no facts"):
        await any_store.set_fact_lines(chat.id, MessageRange(start=11, end=20), [], ["x"], None)


async def test_load_memory_reads_what_the_context_needs(any_store):
    chat = (await any_store.create_chat(turns=make_turns(12))).chat
    commit = CompactionCommit(
        chat_id=chat.id, expected_version=0, summarized_through=8, rolling_summary="r", summary_text=emb("r", 1)
    )
    await any_store.commit_compaction(commit)
    kept = await any_store.add_pin(Pin(chat_id=chat.id, content="kept", importance=9))
    gone = await any_store.add_pin(Pin(chat_id=chat.id, content="gone"))
    await any_store.set_pin_forgotten(gone.id, True)
    await any_store.upsert_summary(chat.id, SummaryLevel.CHUNK, MessageRange(start=1, end=10), emb("c", 2))
    await any_store.upsert_summary(chat.id, SummaryLevel.META, MessageRange(start=1, end=10), emb("m", 3))
    await any_store.upsert_facts(chat.id, MessageRange(start=1, end=10), ["a", "b"], emb("- a\n- b", 4))
    await any_store.set_fact_lines(chat.id, MessageRange(start=1, end=10), ["a"], ["b"], emb("- a", 5))
    m = await any_store.load_memory(chat.id)
    assert (m.chat.id, m.chat.summarized_through) == (chat.id, 8)
    assert [t.seq for t in m.tail] == [9, 10, 11, 12]
    assert [p.id for p in m.pins] == [kept.id]
    assert [(s.level, s.text) for s in m.metas] == [(SummaryLevel.META, "m")]
    assert [(f.lines, f.forgotten) for f in m.facts] == [(["a"], ["b"])]
    with pytest.raises(ChatNotFound):
        await any_store.load_memory("0c1c1c1c-0000-4000-8000-00000000dead")


async def test_delete_cascades(any_store):
    chat = (await any_store.create_chat(turns=make_turns(10))).chat
    await any_store.upsert_summary(chat.id, SummaryLevel.CHUNK, MessageRange(start=1, end=10), emb("s", 1))
    await any_store.add_pin(Pin(chat_id=chat.id, content="p"))
    await any_store.delete_chat(chat.id)
    stats = await any_store.stats()
    assert (stats.total_chats, stats.total_messages, stats.total_summaries, stats.total_pins) == (0, 0, 0, 0)


async def test_text_no_store_can_hold_is_repaired_and_the_turns_after_it_are_stored(any_store, caplog):
    """A lone surrogate (not encodable as UTF-8) and NUL (refused by Postgres in text and JSON)
    become U+FFFD; everything else, a real surrogate pair included, is stored as it was said."""
    chat = (await any_store.create_chat(title="bad \ud800 title\x00")).chat
    poison = Turn.of("user", "a \ud800 b\x00c 😀 \ud83d\ude00", thinking="hm\x00")
    turns = [poison, *make_turns(3)]
    result = await any_store.append_turns(chat.id, turns)
    assert result.added == 4
    stored = await any_store.load_turns(chat.id)
    assert [t.id for t in stored] == [t.id for t in turns]
    assert stored[0].text == "a \ufffd b\ufffdc 😀 😀" and stored[0].thinking == "hm\ufffd"
    assert [t.text for t in stored[1:]] == [t.text for t in turns[1:]]
    assert "a turn's text had code points no store can hold" in caplog.text and "U+FFFD" in caplog.text
    assert (await any_store.get_chat(chat.id)).title == "bad \ufffd title\ufffd"
    assert (await any_store.rename_chat(chat.id, "mine \udcff")).title == "mine \ufffd"
    pin = await any_store.add_pin(Pin(chat_id=chat.id, content="likes \x00 tea"))
    assert [p.content for p in await any_store.list_pins(chat.id)] == [pin.content] == ["likes \ufffd tea"]


async def test_turns_and_chunk_summaries_keep_their_importance(any_store):
    chat = (await any_store.create_chat()).chat
    allergy = Turn.of("user", "I'm allergic to penicillin.")
    chat_turns = [allergy, Turn.of("model", "Noted."), Turn.of("user", "hi", importance=2.5)]
    stored = (await any_store.append_turns(chat.id, chat_turns)).turns
    loaded = await any_store.load_turns(chat.id)
    assert [t.importance for t in loaded] == [t.importance for t in stored] == [9.5, 1.5, 2.5]
    rng = MessageRange(start=1, end=10)
    await any_store.upsert_summary(chat.id, SummaryLevel.CHUNK, rng, emb("c", 1), importance=8.0)
    (summary,) = await any_store.list_summaries(chat.id)
    assert summary.importance == 8.0
    await any_store.upsert_summary(chat.id, SummaryLevel.CHUNK, rng, emb("c2", 2))  # a regeneration without one
    assert [s.importance for s in await any_store.list_summaries(chat.id)] == [None]


async def test_load_memory_holds_the_important_summarised_turns(any_store):
    chat = (await any_store.create_chat(turns=make_turns(12))).chat
    said = [Turn.of("user", "My daughter is called Ana.", importance=8), Turn.of("user", "late", importance=9)]
    await any_store.append_turns(chat.id, said)  # seq 13 and 14
    commit = CompactionCommit(
        chat_id=chat.id, expected_version=0, summarized_through=13, rolling_summary="r", summary_text=emb("r", 1)
    )
    await any_store.commit_compaction(commit)
    m = await any_store.load_memory(chat.id, min_importance=7.5)
    assert [t.seq for t in m.important] == [13]  # 14 is still in the tail
    top = (await any_store.load_memory(chat.id, min_importance=0, important_limit=3)).important
    assert len(top) == 3 and top[0].seq == 13 and all(t.seq <= 13 for t in top)
    assert [t.importance for t in top] == sorted((t.importance for t in top), reverse=True)


async def test_new_pins_never_overwrite_and_edits_keep_source_and_forgetting(any_store):
    chat = (await any_store.create_chat(turns=make_turns(3))).chat
    (turn,) = await any_store.load_turns(chat.id, 2, 2)
    auto = Pin(chat_id=chat.id, content="allergic", importance=9, pin_type="auto", source_turn_id=turn.id, source_seq=2)
    assert [p.id for p in await any_store.add_new_pins([auto])] == [auto.id]
    assert await any_store.add_new_pins([auto.model_copy(update={"content": "changed"})]) == []
    await any_store.set_pin_forgotten(auto.id, True)
    assert await any_store.add_new_pins([auto]) == []  # a forgotten auto pin stays forgotten
    edited = await any_store.add_pin(auto.model_copy(update={"content": "allergic to penicillin", "source_seq": None}))
    assert (edited.content, edited.source_turn_id, edited.source_seq) == ("allergic to penicillin", turn.id, 2)
    assert edited.forgotten_at is not None
    (listed,) = await any_store.list_pins(chat.id, forgotten=True)
    assert (listed.pin_type, listed.source_seq, listed.content) == ("auto", 2, "allergic to penicillin")
    with pytest.raises(ChatNotFound):
        await any_store.add_new_pins([Pin(chat_id="0c1c1c1c-0000-4000-8000-00000000dead", content="x")])


async def test_stats_of_one_chat(any_store):
    one = (await any_store.create_chat(turns=[Turn.of("user", "I'm allergic to nuts."), *make_turns(3)])).chat
    other = (await any_store.create_chat(turns=make_turns(5))).chat
    await any_store.add_pin(Pin(chat_id=one.id, content="nuts", importance=9, pin_type="auto"))
    await any_store.add_pin(Pin(chat_id=other.id, content="tea", importance=3))
    mine = await any_store.stats(one.id)
    assert (mine.total_chats, mine.total_messages, mine.total_pins, mine.auto_pins, mine.important_turns) == (
        1,
        4,
        1,
        1,
        1,
    )
    everything = await any_store.stats()
    assert (everything.total_chats, everything.total_messages, everything.total_pins) == (2, 9, 2)
    assert everything.average_turn_importance is not None and mine.average_turn_importance is not None
    with pytest.raises(ChatNotFound):
        await any_store.stats("0c1c1c1c-0000-4000-8000-00000000dead")


LYON = [
    ("user", "We are planning a weekend in France, maybe Lyon or Annecy."),
    ("model", "Both are lovely; Lyon is known for its food and old town."),
    ("user", "In Lyon we had dinner at Chez Mathilde, the restaurant by the Saône with the quenelles."),
    ("model", "Chez Mathilde sounds wonderful; the quenelles are a classic there."),
    ("user", "The train back was late, we got home after midnight."),
]


async def _chat_of(store, lines, title=None):
    turns = [Turn.of(role, text, created_at=T0) for role, text in lines]
    return (await store.create_chat(title=title, created_at=T0, turns=turns)).chat


async def test_search_words_finds_the_turn_that_names_it(any_store):
    from parla.memory.language.words import query_words

    trip = await _chat_of(any_store, LYON, "France trip")
    other = await _chat_of(any_store, [("user", t) for t in TOPICS_TEXT])
    words = query_words("What was the name of that restaurant in Lyon?")
    found = await any_store.search_words(words, 5)
    assert (found[0].chat_id, found[0].seq, found[0].role) == (trip.id, 3, "user")
    assert "Chez Mathilde" in found[0].text and found[0].title == "France trip"
    assert found[0].last_activity_at == T0
    assert all(a.score >= b.score for a, b in itertools.pairwise(found))
    # only one chat's turns; a request of words no turn holds, or only of words most turns hold
    assert {m.chat_id for m in await any_store.search_words(words, 5, chat_id=other.id)} <= {other.id}
    assert await any_store.search_words(query_words("xylophone"), 5) == []
    assert await any_store.search_words(["the", "was"], 5) == []  # in more than half of the turns
    assert await any_store.search_words([], 5) == []
    # a word is looked up by its letters: query syntax in it is not obeyed
    odd = await any_store.search_words(['"mathilde', "NEAR", "*"], 5)
    assert sorted((m.chat_id, m.seq) for m in odd) == [(trip.id, 3), (trip.id, 4)]
    # a deleted chat's turns leave the index
    await any_store.delete_chat(trip.id)
    assert [m for m in await any_store.search_words(words, 5) if m.chat_id == trip.id] == []


async def test_search_words_indexes_turns_as_they_are_appended(any_store):
    from parla.memory.language.words import query_words

    chat = await _chat_of(any_store, [("user", t) for t in TOPICS_TEXT])
    assert await any_store.search_words(query_words("quenelles"), 5) == []
    await any_store.append_turns(chat.id, [Turn.of("model", "Try the quenelles at Chez Mathilde.", created_at=T0)])
    (hit,) = await any_store.search_words(query_words("quenelles"), 5)
    assert (hit.chat_id, hit.seq) == (chat.id, len(TOPICS_TEXT) + 1)


# small talk full of the words a question is made of ("what", "was", "that", "of", "the")
TOPICS_TEXT = [
    "What was that laptop of the budget course? The one that was cheap.",
    "My sister gets married in Lisbon in June, that was the plan of the family.",
    "What was the name of the film? That was a long night.",
    "The tomato seedlings of the balcony: what was wrong with them?",
    "That was the nocturne I practise, the one in E flat.",
    "What was the weather like? The rain of that week was heavy.",
]


async def test_the_summary_queue_hands_each_chat_out_once_until_it_is_settled(any_store):
    a, b, c = [(await any_store.create_chat(title=t, created_at=T0)).chat for t in "abc"]
    await any_store.queue_summaries([b.id, a.id, b.id, "not-a-chat"])
    await any_store.queue_summaries([c.id, a.id])  # a keeps its place
    assert (await any_store.summary_queue()).waiting == 3
    assert [await any_store.take_summary(60) for _ in range(3)] == [b.id, a.id, c.id]  # queued order
    assert await any_store.take_summary(60) is None  # every one is leased
    await any_store.settle_summary(b.id)  # done: it leaves the queue
    await any_store.settle_summary(a.id, retry_in_s=0, error="429 RESOURCE_EXHAUSTED")  # due again now
    await any_store.settle_summary(c.id, retry_in_s=3600, error="later")
    state = await any_store.summary_queue()
    assert state.waiting == 2 and state.next_due_in_s is not None and state.next_due_in_s < 5
    assert state.last_error in ("429 RESOURCE_EXHAUSTED", "later")
    assert await any_store.take_summary(0) == a.id  # a lease of 0: due again at once, as after a crash
    assert await any_store.take_summary(60) == a.id
    assert await any_store.take_summary(60) is None
    await any_store.delete_chat(c.id)  # a deleted chat leaves the queue with it
    await any_store.settle_summary(a.id)
    assert await any_store.summary_queue() == QueueState()
