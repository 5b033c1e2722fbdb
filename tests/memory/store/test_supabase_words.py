"""The Supabase store's word search at a heavy user's size, on the Postgres peer: the per-user word
counts follow every write of turns, and the search that leaves out turns holding only common words
answers what scoring every matching turn answers."""

from __future__ import annotations

import random
from collections.abc import Iterator

import psycopg
import pytest

from parla.memory.store import WordCounts
from parla.memory.turn import Turn
from tests.conftest import make_turns, signed_in_store
from tests.memory.store.test_contract import window
from tests.memory.store.test_supabase import user_id

# bm25 of every turn of the user holding one of the words found in under half of the turns, as
# search_turn_words ranked before its pruning (k1 1.2, b 0.75, FTS5's idf)
EVERY_TURN = """
with stats as (
    select count(*) as total, avg(word_count)::double precision as avg_len from public.chat_turns where user_id = %(u)s
), telling as (
    select w.word, ln((s.total - d.df + 0.5) / (d.df + 0.5)) as idf
    from unnest(%(words)s::text[]) w(word), stats s,
         lateral (select count(*) as df from public.chat_turns t
                  where t.user_id = %(u)s and t.words @@ quote_literal(w.word)::tsquery) d
    where d.df > 0 and 2 * d.df < s.total
)
select t.chat_id::text, t.seq,
       sum(tl.idf * (u.tf * 2.2) / (u.tf + 1.2 * (0.25 + 0.75 * t.word_count / greatest(s.avg_len, 1)))) as score
from public.chat_turns t, stats s,
     lateral (select x.lexeme, cardinality(x.positions) as tf from unnest(t.words) x) u
     join telling tl on tl.word = u.lexeme
where t.user_id = %(u)s
group by t.chat_id, t.seq
order by round(sum(tl.idf * (u.tf * 2.2) / (u.tf + 1.2 * (0.25 + 0.75 * t.word_count / greatest(s.avg_len, 1))))::numeric, 9) desc,
         t.chat_id, t.seq
limit %(n)s
"""

RECOUNT = """
select '' as word, count(*) as turns, coalesce(sum(word_count), 0) as tokens from public.chat_turns where user_id = %(u)s
union all
select l.lexeme, count(*), 0 from public.chat_turns t, unnest(tsvector_to_array(t.words)) l(lexeme)
where t.user_id = %(u)s group by l.lexeme
"""


@pytest.fixture
def db(supabase) -> Iterator[psycopg.Connection]:
    with psycopg.connect(supabase.dsn, autocommit=True) as conn:
        yield conn


def counts(db: psycopg.Connection, uid: str) -> dict[str, tuple[int, int]]:
    rows = db.execute(
        "select word, turns, tokens from public.turn_word_counts where user_id = %s and turns > 0", (uid,)
    ).fetchall()
    return {w: (int(n), int(t)) for w, n, t in rows}


async def test_word_counts_follow_every_write_of_turns(supabase, db, tmp_path):
    async with await signed_in_store(supabase, tmp_path) as store:
        uid = await user_id(store)
        kept = (await store.create_chat(turns=[Turn.of("user", "Lyon lyon quenelles"), *make_turns(3)])).chat
        gone = (await store.create_chat(turns=[Turn.of("user", "quenelles in Lyon, twice: Lyon")])).chat
        await store.append_turns(kept.id, [Turn.of("model", "and the quenelles were good")])
        assert counts(db, uid) == {w: (int(n), int(t)) for w, n, t in db.execute(RECOUNT, {"u": uid}).fetchall()}
        assert counts(db, uid)["lyon"] == (2, 0) and counts(db, uid)["quenelles"] == (3, 0)
        await store.delete_chat(gone.id)  # its turns go by cascade
        assert counts(db, uid) == {w: (int(n), int(t)) for w, n, t in db.execute(RECOUNT, {"u": uid}).fetchall()}
        assert counts(db, uid)["lyon"] == (1, 0) and counts(db, uid)[""][0] == 5
    # a user deleted with their chats: the counts go with them, nothing is written back for them
    db.execute("delete from auth.users where id = %s", (uid,))
    assert counts(db, uid) == {}
    assert kept.id  # the chat was stored under that user


async def test_windows_of_one_call_are_written_at_once_the_later_of_two_kept(supabase, db, tmp_path):
    """upsert_windows writes a call's windows in one statement: of two with the same first turn the
    later is kept (as when they were written one by one), and the words are counted once."""
    async with await signed_in_store(supabase, tmp_path) as store:
        uid = await user_id(store)
        chat = (await store.create_chat(turns=make_turns(4))).chat
        await store.upsert_windows(
            chat.id,
            [
                window(1, 2, "Heron by the lake", 1),
                window(3, 4, "a heron again", 2),
                window(1, 2, "Otter by the lake", 3),
            ],
        )
        rows = db.execute(
            "select start_seq, body from public.chat_windows where chat_id = %s order by start_seq", (chat.id,)
        ).fetchall()
        assert rows == [(1, "Otter by the lake"), (3, "a heron again")]
        counts = await store.word_counts(["heron", "otter", "lake"])
        assert counts == WordCounts(windows=2, counts={"heron": 1, "otter": 1, "lake": 1})
        assert (
            dict(db.execute("select word, windows from public.window_words where user_id = %s", (uid,)).fetchall())[""]
            == 2
        )


async def test_word_search_leaves_out_turns_of_common_words_alone_with_the_same_answer(supabase, db, tmp_path):
    """Turns holding only words too common to reach the best scores are not scored (one scoring
    pass, over the turns holding the rare word, when it finds enough of them); the answer is what
    scoring every matching turn gives, for every count, ties included."""
    rng = random.Random(3)
    filler = [f"filler{n}" for n in range(40)]
    rare = {(5, 2): "heron", (9, 7): "heron heron", (17, 1): "heron", (23, 4): "heron", (31, 6): "a heron"}
    async with await signed_in_store(supabase, tmp_path) as store:
        uid = await user_id(store)
        for c in range(40):
            turns = []
            for t in range(10):
                words = rng.sample(filler, rng.randint(3, 12))
                words += ["plan"] * (rng.random() < 0.3) + ["today"] * (rng.random() < 0.25)
                # the rare word's turns hold the common ones too: their scores set a high floor
                words += [f"{rare[(c, t)]} plan today" if (c, t) in rare else ""]
                words += ["heron plan today"] * (c in (12, 13) and t == 3)  # two tied turns
                turns.append(Turn.of("user" if t % 2 else "model", " ".join(words)))
            await store.create_chat(turns=turns)
        words = ["heron", "plan", "today"]
        for count in range(1, 12):
            every = db.execute(EVERY_TURN, {"u": uid, "words": words, "n": count}).fetchall()
            found = await store.search_words(words, count)
            assert [(m.chat_id, m.seq) for m in found] == [(c, s) for c, s, _ in every]
            assert [m.score for m in found] == pytest.approx([score for _, _, score in every], rel=1e-12)
    # 7 turns hold the rare word: at 8 there is no floor, and every matching turn is scored
    for count, passes in ((1, 1), (3, 1), (8, 2)):
        # a session of its own, in one transaction: its call counts start from none and are read
        # before they are flushed
        with psycopg.connect(supabase.dsn) as conn:
            conn.execute("set track_functions = 'all'")
            conn.execute("select * from public.search_turn_words(%s, %s, null, %s)", (words, count, uid)).fetchall()
            calls = conn.execute("select pg_stat_get_xact_function_calls('parla.turn_scores'::regproc)").fetchone()
        assert calls == (passes,), count
