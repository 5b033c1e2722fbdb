"""The Supabase store's word search at a heavy user's size, on the Postgres peer: the per-user word
counts and bounds follow every write of turns, and the search that leaves out the turns that cannot
reach the best scores answers what scoring every matching turn answers."""

from __future__ import annotations

import random
import re
from collections.abc import Iterator

import psycopg
import pytest

from parla.memory.language.words import query_words
from parla.memory.store.protocol import WordCounts
from parla.memory.store.supabase.schema import SCHEMA_VERSION, apply_migrations, migrations
from parla.records.turn import Turn
from tests.conftest import make_turns, signed_in_store
from tests.memory.store.supabase.test_store import user_id
from tests.memory.store.test_contract import window

pytestmark = pytest.mark.tier("postgres")


# bm25 of every turn of the user holding one of the words found in under half of the turns, as
# search_turn_words ranked before its pruning (k1 1.2, b 0.75, FTS5's idf); a turn's terms added
# in the order of its words, as the search adds them, so that two turns whose scores differ only
# by the order of their terms rank as in the search
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
       sum(tl.idf * (u.tf * 2.2) / (u.tf + 1.2 * (0.25 + 0.75 * t.word_count / greatest(s.avg_len, 1)))
           order by u.lexeme) as score
from public.chat_turns t, stats s,
     lateral (select x.lexeme, cardinality(x.positions) as tf from unnest(t.words) x) u
     join telling tl on tl.word = u.lexeme
where t.user_id = %(u)s
group by t.chat_id, t.seq
order by score desc, t.chat_id, t.seq
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
    """Turns holding only words too common to reach the best scores are not scored (those scored
    hold the rare word, when enough of them do); the answer is what scoring every matching turn
    gives, for every count, ties included."""
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
    # 7 turns hold the rare word: up to 7, the turns scored hold it (the sets that give a floor
    # and those that can reach it: at most twice 7); at 8 there is no floor, and every matching
    # turn is scored
    holding = db.execute(
        "select count(*) from public.chat_turns where user_id = %s and words @@ 'heron | plan | today'", (uid,)
    ).fetchone()
    assert holding is not None
    for count in (1, 3, 7):
        assert turns_scored(supabase.dsn, uid, words, count) <= 2 * 7, count
    assert turns_scored(supabase.dsn, uid, words, 8) >= holding[0]


def turns_scored(dsn: str, uid: str, words: list[str], count: int) -> int:
    """The turns search_turn_words scored for one search: the rows its scans of chat_turns gave
    parla.turn_scores, by the plans it ran (whatever index the planner chose to find them)."""
    plans: list[str] = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        for setting in (
            "LOAD 'auto_explain'",
            "SET auto_explain.log_min_duration = 0",
            "SET auto_explain.log_nested_statements = on",
            "SET auto_explain.log_analyze = on",
            "SET auto_explain.log_level = notice",
            "SET client_min_messages = notice",
        ):
            conn.execute(setting)
        conn.add_notice_handler(lambda d: plans.append(d.message_primary or ""))
        conn.execute("select * from public.search_turn_words(%s, %s, null, %s)", (words, count, uid)).fetchall()
    scans = [
        re.search(r"Scan on chat_turns t .*actual time=\S+ rows=([\d.]+)", line)
        for plan in plans
        if "cross join lateral" in plan
        for line in plan.splitlines()
    ]
    return int(sum(float(m.group(1)) for m in scans if m))


BOUNDS = """
select l.lexeme, max(cardinality(l.positions)), min(t.word_count)
from public.chat_turns t, unnest(t.words) l where t.user_id = %(u)s group by l.lexeme
"""


def bounds(db: psycopg.Connection, uid: str) -> dict[str, tuple[int, int | None]]:
    rows = db.execute(
        "select word, most_in_turn, shortest_turn from public.turn_word_counts where user_id = %s and word <> ''",
        (uid,),
    ).fetchall()
    return {w: (int(most), shortest) for w, most, shortest in rows}


def exact_bounds(db: psycopg.Connection, uid: str) -> dict[str, tuple[int, int | None]]:
    return {w: (int(most), int(shortest)) for w, most, shortest in db.execute(BOUNDS, {"u": uid}).fetchall()}


def never_too_low(db: psycopg.Connection, uid: str) -> None:
    """Every word's kept bound covers every turn holding it (a higher count, a shorter turn)."""
    kept = bounds(db, uid)
    for word, (most, shortest) in exact_bounds(db, uid).items():
        assert kept[word][0] >= most and kept[word][1] is not None and kept[word][1] <= shortest, word


async def test_word_bounds_follow_every_write_and_are_never_too_low(supabase, db, tmp_path):
    """Per word, its highest count in one turn and the shortest turn holding it: exact after
    writes, loose (never too low) after a delete, and started again once no turn holds it."""
    async with await signed_in_store(supabase, tmp_path) as store:
        uid = await user_id(store)
        first = (
            await store.create_chat(
                turns=[Turn.of("user", "Lyon lyon lyon quenelles"), Turn.of("model", "we walked in Lyon by the river")]
            )
        ).chat
        assert bounds(db, uid) == exact_bounds(db, uid)
        assert bounds(db, uid)["lyon"] == (3, 4) and bounds(db, uid)["river"] == (1, 7)
        short = (await store.create_chat(turns=[Turn.of("user", "Lyon")])).chat
        await store.append_turns(first.id, [Turn.of("user", "quenelles quenelles in the river")])
        assert bounds(db, uid) == exact_bounds(db, uid)
        assert bounds(db, uid)["lyon"] == (3, 1) and bounds(db, uid)["quenelles"] == (2, 4)
        await store.delete_chat(short.id)
        never_too_low(db, uid)
        assert bounds(db, uid)["lyon"] == (3, 1)  # loose: the one-word turn is gone
        # a turn changed in place counts as taken out and put back
        db.execute(
            'update public.chat_turns set parts = \'[{"text": "river river river river river"}]\' '
            "where chat_id = %s and seq = 2",
            (first.id,),
        )
        never_too_low(db, uid)
        assert bounds(db, uid)["river"] == (5, 5)
        await store.delete_chat(first.id)
        assert all(b == (0, None) for b in bounds(db, uid).values())  # no turn holds them: started again
        await store.create_chat(turns=[Turn.of("user", "Lyon lyon, said the guide")])
        assert {w: b for w, b in bounds(db, uid).items() if b != (0, None)} == exact_bounds(db, uid)
        assert bounds(db, uid)["lyon"] == (2, 5)


async def test_the_migration_finds_the_bounds_of_turns_stored_before_it(supabase, pg_cluster, tmp_path):
    """A project with turns before the migration that keeps the bounds: applying it (and the
    migrations after it, applied again) finds them for every stored turn."""
    async with await signed_in_store(supabase, tmp_path) as store:
        uid = await user_id(store)
        for n in range(3):
            await store.create_chat(turns=[*make_turns(4, start=n * 4), Turn.of("user", "heron " * (n + 1))])
    name = psycopg.conninfo.conninfo_to_dict(supabase.dsn)["dbname"]
    (first,) = [m.version for m in migrations() if m.name == "parla_turn_word_bounds"]
    later = [m for m in migrations() if m.version >= first]
    with psycopg.connect(supabase.dsn, autocommit=True) as conn:
        conn.execute("alter table public.turn_word_counts drop column most_in_turn, drop column shortest_turn")
        conn.execute(
            "delete from supabase_migrations.schema_migrations where version = any(%s)", ([m.version for m in later],)
        )
        assert apply_migrations(pg_cluster.owner_dsn(name)) == later
        assert bounds(conn, uid) == exact_bounds(conn, uid)
        assert bounds(conn, uid)["heron"] == (3, 1)
        assert conn.execute("select public.parla_schema_version()").fetchone() == (SCHEMA_VERSION,)


# chats that repeat their frame in every turn, as a heavy history does: (frame, its subjects, the
# aspects its turns discuss)
FRAMES = [
    (
        "my {} who will not stop barking",
        ["beagle", "terrier", "husky", "collie", "poodle", "boxer"],
        ["leash", "crate", "vet", "treats"],
    ),
    (
        "fixing a bug in my {} service",
        ["python", "go", "rust", "java", "kotlin", "elixir"],
        ["deadlock", "timeout", "logs", "test"],
    ),
    (
        "a trip to {} next spring",
        ["japan", "peru", "chile", "norway", "iceland", "morocco"],
        ["flights", "hotel", "museum", "budget"],
    ),
    (
        "learning to play {} on the piano",
        ["chopin", "bach", "satie", "debussy", "liszt", "ravel"],
        ["tempo", "pedal", "fingering", "ornaments"],
    ),
]


async def test_questions_on_repeated_frames_read_few_turns_for_the_same_answer(supabase, db, tmp_path):
    """A question whose frame words are each in a quarter of the turns: the search reads the turns
    holding its rarer words together, not every turn holding one of them, and answers what
    scoring every matching turn answers (ids, scores, ties) for every count."""
    rng = random.Random(11)
    filler = [f"word{n}" for n in range(30)]
    async with await signed_in_store(supabase, tmp_path) as store:
        uid = await user_id(store)
        for frame, subjects, aspects in FRAMES:
            for subject in subjects * 2:
                turns = []
                for t in range(12):
                    aspect = rng.choice(aspects)
                    said = [f"about {frame.format(subject)}:", *rng.sample(filler, rng.randint(2, 6))]
                    said += [f"what about the {aspect}?"] * (rng.random() < 0.6) + [aspect] * (rng.random() < 0.15)
                    turns.append(Turn.of("user" if t % 2 else "model", " ".join(said)))
                await store.create_chat(turns=turns)
        questions = [
            f"what did I decide about the {aspects[n % 4]} for {frame.format(subjects[n])}"
            for frame, subjects, aspects in FRAMES
            for n in (0, 3, 5)
        ]
        for question in questions:
            words = query_words(question)
            for count in (1, 10, 40):
                every = db.execute(EVERY_TURN, {"u": uid, "words": words, "n": count}).fetchall()
                found = await store.search_words(words, count)
                assert [(m.chat_id, m.seq) for m in found] == [(c, s) for c, s, _ in every], (question, count)
                assert [m.score for m in found] == pytest.approx([score for _, _, score in every], rel=1e-12)
    words = query_words(questions[0])  # the leash for my beagle who will not stop barking
    (one_rarer,) = db.execute(
        "select count(*) from public.chat_turns where user_id = %s and words @@ 'leash | beagle'", (uid,)
    ).fetchone()
    scored = turns_scored(supabase.dsn, uid, words, 5)
    assert scored < one_rarer / 2, (scored, one_rarer)
