"""What only the SQLite store does: several processes on one file, schema versions, a file
private to its user, and an open that fails cleanly."""

from __future__ import annotations

import asyncio
import json
import os
import random
import sqlite3
import stat
import threading
from pathlib import Path

import pytest

from parla.memory.errors import StoreError
from parla.memory.language.importance import turn_importance
from parla.memory.store.sqlite.schema import MIGRATIONS
from parla.memory.store.sqlite.store import SQLiteChatStore
from parla.records.turn import Turn
from tests.conftest import eventually, make_turns
from tests.memory.store.sqlite.test_cancel import quiet_threads, threads
from tests.memory.store.test_contract import emb

pytestmark = pytest.mark.tier("fast")

WORD_INDEX = next(m for m in MIGRATIONS if "turn_words" in m)


async def test_a_write_in_another_process_shows_up_in_the_next_search(store):
    a = (await store.create_chat(turns=make_turns(2))).chat
    await store.set_summary_text(a.id, emb("about a", 1), 0)
    assert [round(m.similarity, 4) for m in await store.search(emb("q", 2), 10)] != [1.0]
    async with SQLiteChatStore(store.path) as other:
        await other.set_summary_text(a.id, emb("about a, changed", 2), 0)
    assert [round(m.similarity, 4) for m in await store.search(emb("q", 2), 10)] == [1.0]


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


async def test_a_store_made_before_the_word_index_gets_its_turns_indexed(tmp_path):
    path = tmp_path / "old.db"
    async with SQLiteChatStore(path) as s:
        chat = (await s.create_chat(turns=[*make_turns(6), Turn.of("user", "Dinner at Chez Mathilde in Lyon")])).chat
    with sqlite3.connect(path) as raw:  # the file as the Parla before the word index left it
        raw.executescript(
            "DROP TRIGGER turn_words_insert; DROP TRIGGER turn_words_delete; DROP TABLE turn_vocab; "
            "DROP TABLE turn_words; ALTER TABLE turns DROP COLUMN usage; DROP TRIGGER title_window_stale; "
            "DROP TABLE profile; DROP TABLE vector_chats; ALTER TABLE turns DROP COLUMN sources; DROP TABLE reminders; "
            "DROP TABLE summary_queue; DROP TRIGGER word_bounds_forget; DROP TABLE word_bounds; "
            "DELETE FROM meta WHERE key = 'store_id'; "
            f"PRAGMA user_version = {MIGRATIONS.index(WORD_INDEX)};"
        )
    async with SQLiteChatStore(path) as s:
        (hit,) = await s.search_words(["mathilde"], 5)
        assert (hit.chat_id, hit.seq, hit.text) == (chat.id, 7, "Dinner at Chez Mathilde in Lyon")
        await s.append_turns(chat.id, [Turn.of("model", "Mathilde's quenelles are famous.")])
        assert sorted(m.seq for m in await s.search_words(["mathilde"], 5)) == [7, 8]


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


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


async def test_the_store_is_private_to_its_user(tmp_path, caplog):
    path = tmp_path / "data" / "parla" / "parla.db"
    async with SQLiteChatStore(path) as store:
        await store.create_chat(turns=make_turns(2))
        assert [_mode(p) for p in (path.parent, path, Path(f"{path}-wal"), Path(f"{path}-shm"))] == [0o700] + [
            0o600
        ] * 3
    assert "readable by you alone" not in caplog.text


async def test_a_store_others_could_read_is_tightened_once_and_said(tmp_path, caplog):
    folder = tmp_path / "parla"
    async with SQLiteChatStore(folder / "parla.db") as store:
        await store.create_chat(turns=make_turns(2))
        os.chmod(folder, 0o755)  # as an older Parla made them, -wal and -shm included
        for path in folder.iterdir():
            os.chmod(path, 0o644)
    async with SQLiteChatStore(folder / "parla.db"):
        assert _mode(folder) == 0o700 and {_mode(p) for p in folder.iterdir()} == {0o600}
    assert caplog.text.count("readable by you alone") == 1 and str(folder / "parla.db") in caplog.text
    async with SQLiteChatStore(folder / "parla.db"):
        pass
    assert caplog.text.count("readable by you alone") == 1


async def test_a_shared_folder_is_left_alone_and_a_foreign_file_untouched(tmp_path):
    shared = tmp_path / "home"
    shared.mkdir()
    shared.chmod(0o755)
    (shared / "notes.txt").write_text("mine")
    async with SQLiteChatStore(shared / "parla.db"):
        pass
    assert _mode(shared) == 0o755 and _mode(shared / "parla.db") == 0o600
    notes = tmp_path / "notes.db"
    notes.write_text("not a database, a list of things to buy\n" * 10)
    notes.chmod(0o644)
    with pytest.raises(StoreError, match="not a database"):
        await SQLiteChatStore(notes).open()
    assert _mode(notes) == 0o644


async def test_a_failed_open_ends_its_thread(tmp_path):
    before = await quiet_threads()
    bad = tmp_path / "bad.db"
    bad.write_text("x" * 4096)
    for path in (bad, tmp_path / "newer.db"):
        if path.name == "newer.db":
            async with SQLiteChatStore(path):
                pass
            with sqlite3.connect(path) as raw:
                raw.execute("PRAGMA user_version = 99")
        with pytest.raises(StoreError, match=str(path)):
            await SQLiteChatStore(path).open()
    await eventually(lambda: threads() <= before, what="the failed opens' threads to end")


async def test_an_sqlite_failure_is_a_store_error_naming_the_file(store):
    chat = (await store.create_chat()).chat
    with sqlite3.connect(store.path) as other:  # another program breaks the file under us
        other.execute("DROP TABLE pins")
    with pytest.raises(StoreError, match=f"cannot read the SQLite store {store.path} \\(no such table: pins\\)"):
        await store.list_pins(chat.id)
    assert (await store.append_turns(chat.id, make_turns(1))).added == 1


async def test_a_file_of_the_previous_schema_gets_its_turns_scored(tmp_path):
    """Migrating a file made before importance existed scores every stored turn by the rules."""
    path = tmp_path / "old.db"
    T = "2026-01-01T00:00:00+00:00"
    raw = sqlite3.connect(path)
    for script in MIGRATIONS[:2]:
        for statement in script.split(";\n"):
            raw.execute(statement)
    raw.execute("PRAGMA user_version = 2")
    raw.execute("INSERT INTO chats (id, created_at, last_activity_at, turn_count) VALUES ('c', ?, ?, 2)", (T, T))
    for seq, role, text in ((1, "user", "My flight to Lima is on June 3."), (2, "model", "Have a good trip.")):
        raw.execute(
            "INSERT INTO turns (id, chat_id, seq, role, parts, created_at, source) VALUES (?, 'c', ?, ?, ?, ?, 'voice')",
            (f"t{seq}", seq, role, json.dumps([{"text": text}]), T),
        )
    raw.commit()
    raw.close()
    async with SQLiteChatStore(path) as store:
        turns = await store.load_turns("c")
        assert [t.importance for t in turns] == [
            turn_importance(t.model_copy(update={"importance": None})) for t in turns
        ]
        assert turns[0].importance == 8.0 and (await store.stats("c")).important_turns == 1


async def test_a_word_search_across_chats_keeps_every_tie_at_the_cut(store):
    """The search reads only the turns scoring at least the last one returned: turns tied with
    it are still ordered by chat and turn, as if every match had been read."""
    said = []
    for i in range(6):
        turns = [
            Turn.of(role, text)
            for _ in range(2)
            for role, text in (
                ("user", "the heron flew over the lake"),
                ("model", f"unrelated {i}"),
                ("user", "something else"),
                ("model", "and more"),
            )
        ]
        chat = (await store.create_chat(turns=turns)).chat
        said += [(chat.id, 1), (chat.id, 5)]
    for count in (1, 4, 5, 12, 20):
        found = await store.search_words(["heron"], count)
        assert [(m.chat_id, m.seq) for m in found] == sorted(said)[:count]


async def test_a_word_search_across_chats_skips_turns_of_common_words_alone_with_the_same_answer(store, monkeypatch):
    """Turns holding only words common enough that they cannot reach the best scores are not
    scored; the answer is what ranking every matching turn by bm25 gives, ties included."""
    from parla.memory.store.sqlite import search as sqlite_search

    rng = random.Random(3)
    filler = [f"filler{n}" for n in range(40)]
    rare = {(5, 2): "heron", (9, 7): "heron heron", (17, 1): "heron", (23, 4): "heron", (31, 6): "a heron"}
    for c in range(40):
        turns = []
        for t in range(10):
            words = rng.sample(filler, rng.randint(3, 12))
            words += ["plan"] * (rng.random() < 0.3) + ["today"] * (rng.random() < 0.25)
            words += [rare.get((c, t), "")] + ["heron"] * (c in (12, 13) and t == 3)  # two tied turns
            turns.append(Turn.of("user" if t % 2 else "model", " ".join(words)))
        await store.create_chat(turns=turns)
    words = ["heron", "plan", "today"]
    scored: list[str] = []
    scoring = sqlite_search._scored_turns

    def seen(db: sqlite3.Connection, word: str, taken: list[str], rest: list[str]) -> dict[int, float]:
        scored.append(word)
        return scoring(db, word, taken, rest)

    monkeypatch.setattr(sqlite_search, "_scored_turns", seen)
    # the pruning itself: a store this small has its few matching turns scored in one query
    monkeypatch.setattr(sqlite_search, "_SCORE_ALL_PER_WANTED", 0)
    with sqlite3.connect(store.path) as db:
        for count in range(1, 12):
            every = db.execute(
                "SELECT chat_id, seq, -bm25(turn_words) FROM turn_words WHERE turn_words MATCH 'heron OR plan OR today' "
                "ORDER BY bm25(turn_words), chat_id, seq LIMIT ?",
                (count,),
            ).fetchall()
            scored.clear()
            found = await store.search_words(words, count)
            assert [(m.chat_id, m.seq) for m in found] == [row[:2] for row in every]
            # the same bm25, summed in another order of the words
            assert [m.score for m in found] == pytest.approx([row[2] for row in every], rel=1e-12)
            # the turns of "heron" are scored first; those holding "plan" or "today" alone never
            # are: they cannot reach the best scores
            assert scored == (["heron"] if count <= 7 else ["heron", "today"])  # its 7 turns first


async def test_a_word_search_runs_while_the_store_connection_is_busy(store):
    """Recall's word search runs beside its vector search: on a connection of its own."""
    said = ["the heron flew over the lake", "a grey one", "it fished all morning"]
    await store.create_chat(turns=[Turn.of("user" if i % 2 else "model", t) for i, t in enumerate(said)])
    busy, release = asyncio.Event(), threading.Event()
    loop = asyncio.get_running_loop()

    def hold(db: sqlite3.Connection) -> None:
        loop.call_soon_threadsafe(busy.set)
        release.wait(10)

    holding = asyncio.ensure_future(store._read(hold))
    try:
        await busy.wait()
        (found,) = await asyncio.wait_for(store.search_words(["heron"], 5), 5)
        assert found.seq == 1 and not holding.done()
    finally:
        release.set()
        await holding


# Words that recur together, so only what they really add (not 2.2 idf) lets a search of all five
# stop after the turns of "heron", which are long and score low.
_TOGETHER = "alpha beta gamma delta"
_WORDS = ["heron", "alpha", "beta", "gamma", "delta"]


async def _recurring_words(store: SQLiteChatStore) -> list[str]:
    """30 chats where the words of `_TOGETHER` recur together: their ids."""
    rng = random.Random(5)
    filler = [f"filler{n}" for n in range(60)]
    chats = []
    for c in range(30):
        turns = []
        for t in range(10):
            words = rng.sample(filler, 8) + [_TOGETHER] * (rng.random() < 0.3)
            if t == 3 and c < 10:  # ten long turns of "heron", each with the other words
                words = rng.sample(filler, 26) + ["heron", _TOGETHER]
            turns.append(Turn.of("user" if t % 2 else "model", " ".join(words)))
        chats.append((await store.create_chat(turns=turns)).chat.id)
    return chats


async def _same_as_every_turn_ranked(store: SQLiteChatStore) -> list[tuple[str, int]]:
    with sqlite3.connect(store.path) as db:
        every = db.execute(
            "SELECT chat_id, seq FROM turn_words WHERE turn_words MATCH 'heron OR alpha OR beta OR gamma OR delta' "
            "ORDER BY bm25(turn_words), chat_id, seq LIMIT 10"
        ).fetchall()
    found = [(m.chat_id, m.seq) for m in await store.search_words(_WORDS, 10)]
    assert found == every
    return found


def _kept_figures(path: Path) -> dict[str, tuple[int, bool]]:
    """Each kept word's count of turns, and whether the most it adds is kept."""
    with sqlite3.connect(path) as db:
        return {
            w: (n, impact is not None) for w, n, impact in db.execute("SELECT word, turns, impact FROM word_bounds")
        }


def _turns_of_words(path: Path) -> dict[str, int]:
    with sqlite3.connect(path) as db:
        marks = ",".join("?" * len(_WORDS))
        return dict(db.execute(f"SELECT term, doc FROM turn_vocab WHERE term IN ({marks})", _WORDS).fetchall())


async def test_a_word_search_stays_exact_as_turns_come_and_chats_go(store):
    """The most each word adds to a turn is kept between searches: a turn added later that adds
    more (short, its words twice) is still found, and so after a chat is deleted."""
    chats = await _recurring_words(store)
    for _ in range(3):  # what each word adds is found and kept
        assert all(seq == 4 for _, seq in await _same_as_every_turn_ranked(store))
    short = (await store.create_chat(turns=[Turn.of("user", f"{_TOGETHER} {_TOGETHER}")])).chat.id
    assert (short, 1) in await _same_as_every_turn_ranked(store)
    await store.delete_chat(short)
    await store.delete_chat(chats[0])
    assert all(chat not in (short, chats[0]) for chat, _ in await _same_as_every_turn_ranked(store))
    shorter = (await store.create_chat(turns=[Turn.of("user", f"{_TOGETHER} {_TOGETHER}")])).chat.id
    assert (shorter, 1) in await _same_as_every_turn_ranked(store)


async def test_what_each_word_weighs_is_kept_in_the_file_for_the_next_process(store, monkeypatch):
    """A new process (`parla recall` without a daemon) finds each word's count of turns and the
    most it adds to a turn in the store's file, instead of walking every turn of the word again;
    new turns bring them up to date, and a deleted chat drops them."""
    from parla.memory.store.sqlite.word_bounds import WordBounds

    chats = await _recurring_words(store)
    for _ in range(3):  # the figures fill as searches come (a first search finds only the cheap ones)
        await _same_as_every_turn_ranked(store)
    kept = _kept_figures(store.path)
    assert {w: n for w, (n, _) in kept.items()} == _turns_of_words(store.path)
    assert [w for w, (_, has_impact) in kept.items() if has_impact] == ["alpha", "beta", "delta", "gamma"]

    walks: list[str] = []
    finding = WordBounds._best_impact

    def walked(self: WordBounds, word: str, idf: float, after: int | None) -> float:
        if after is None:
            walks.append(word)
        return finding(self, word, idf, after)

    monkeypatch.setattr(WordBounds, "_best_impact", walked)
    async with SQLiteChatStore(store.path) as other:
        await _same_as_every_turn_ranked(other)
        assert walks == []  # found in the file
        short = (await other.create_chat(turns=[Turn.of("user", f"{_TOGETHER} {_TOGETHER}")])).chat.id
        assert (short, 1) in await _same_as_every_turn_ranked(other)
        assert walks == []  # only the new turn was scored
        assert {w: n for w, (n, _) in _kept_figures(store.path).items()} == _turns_of_words(store.path)
        await other.delete_chat(chats[0])
    assert _kept_figures(store.path) == {}
    await _same_as_every_turn_ranked(store)
    assert {w: n for w, (n, _) in _kept_figures(store.path).items()} == _turns_of_words(store.path)


async def test_a_word_search_never_waits_to_keep_its_figures(store):
    """While another connection holds the file's write lock (`parla import` beside the daemon),
    a word search answers at once and keeps nothing; a later one keeps its figures."""
    await _recurring_words(store)
    writer = sqlite3.connect(store.path, isolation_level=None)
    try:
        writer.execute("BEGIN IMMEDIATE")
        await asyncio.wait_for(_same_as_every_turn_ranked(store), 5)
        writer.execute("ROLLBACK")
    finally:
        writer.close()
    assert _kept_figures(store.path) == {}
    await _same_as_every_turn_ranked(store)
    assert set(_kept_figures(store.path)) == set(_WORDS)
