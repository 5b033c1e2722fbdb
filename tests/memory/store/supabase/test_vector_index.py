"""The Supabase store's vector indexes (pgvector HNSW at half precision, one per dimension) on the
Postgres peer: a search uses them, returns what an exact scan returns, keeps to the caller's rows
even when they are rare, and a re-embed commits in pages."""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Iterator

import numpy as np
import psycopg
import pytest

from parla.memory.store.supabase.schema import IndexCheck, apply_migrations, check_vector_indexes, migrations
from tests.conftest import signed_in_store
from tests.memory.store.supabase.test_store import user_id
from tests.memory.store.test_contract import emb

pytestmark = pytest.mark.tier("postgres")

DIM = 256
EMBEDDER = "test-embedder"
TABLES = ("chat_windows", "chat_summaries", "chat_facts", "chats")


def unit(rng: np.random.Generator, n: int, dim: int = DIM) -> np.ndarray:
    v = rng.standard_normal((n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def literal(v: np.ndarray) -> str:
    return "[" + ",".join(f"{x:.7g}" for x in v) + "]"


def near(rng: np.random.Generator, centers: np.ndarray, n: int) -> np.ndarray:
    """`n` unit vectors, each near one of the centers (texts fall into topics, as real ones do)."""
    picked = centers[rng.integers(len(centers), size=n)]
    v = picked + unit(rng, n)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


TOPICS = unit(np.random.default_rng(0), 40)


def fill(
    conn: psycopg.Connection, uid: str, chats: int, windows: int, rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """`chats` chats of the user, each with `windows` windows about a few topics; returns each
    chat's vectors as stored (float32)."""
    out = {str(uuid.uuid4()): near(rng, TOPICS[rng.choice(len(TOPICS), 3)], windows) for _ in range(chats)}
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO public.chats (id, user_id, turn_count) VALUES (%s, %s, %s)",
            [(chat, uid, windows) for chat in out],
        )
        cur.executemany(
            "INSERT INTO public.chat_windows (chat_id, user_id, start_seq, end_seq, body, words, embedding, embedder)"
            " VALUES (%s, %s, %s, %s, %s, '{}', %s::extensions.vector, %s)",
            [
                (chat, uid, i + 1, i + 1, f"window {i}", literal(v), EMBEDDER)
                for chat, vectors in out.items()
                for i, v in enumerate(vectors)
            ],
        )
        cur.execute(
            "INSERT INTO public.memory_embedders (user_id, embedder, dim) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
            (uid, EMBEDDER, DIM),
        )
    return out


def exact_top(vectors: dict[str, np.ndarray], query: np.ndarray, k: int) -> list[str]:
    best = {chat: float((v @ query).max()) for chat, v in vectors.items()}
    return sorted(best, key=lambda c: -best[c])[:k]


@pytest.fixture
def db(supabase) -> Iterator[psycopg.Connection]:
    """A superuser session (it may act for a user id) that prints each nested statement's plan."""
    with psycopg.connect(supabase.dsn, autocommit=True) as conn:
        conn.execute("LOAD 'auto_explain'")
        conn.execute("SET auto_explain.log_min_duration = 0")
        conn.execute("SET auto_explain.log_nested_statements = on")
        conn.execute("SET auto_explain.log_level = notice")
        conn.execute("SET client_min_messages = notice")
        yield conn


def search(conn: psycopg.Connection, uid: str, query: np.ndarray, k: int) -> tuple[list[str], list[str]]:
    """The chats search_chats_semantic returns, and the plans of the statements it ran."""
    plans: list[str] = []

    def keep(d: psycopg.errors.Diagnostic) -> None:
        plans.append(d.message_primary or "")

    conn.add_notice_handler(keep)
    try:
        rows = conn.execute(
            "SELECT chat_id FROM public.search_chats_semantic(%s::extensions.vector, %s, p_user_id => %s)",
            (literal(query), k, uid),
        ).fetchall()
    finally:
        conn.remove_notice_handler(keep)
    return [str(r[0]) for r in rows], plans


def uses_index(plans: list[str], name: str) -> bool:
    return any(f"Index Scan using {name}" in p for p in plans)


def test_the_search_uses_the_index_and_equals_an_exact_search(supabase, db):
    rng = np.random.default_rng(7)
    uid = supabase.shim.create_user("heavy@example.com")
    vectors = fill(db, uid, chats=300, windows=8, rng=rng)
    db.execute("ANALYZE public.chat_windows")
    for query in near(rng, TOPICS, 20):
        found, plans = search(db, uid, query, 10)
        assert found == exact_top(vectors, query, 10)
        assert uses_index(plans, "chat_windows_hnsw_256_m32"), "\n".join(plans)


def test_long_chats_on_the_asked_subject_do_not_crowd_out_the_rest(supabase, db):
    """Three long chats hold 180 windows nearer the request than any other chat's: the chats ranked
    4th to 10th are found past them (a history repeats itself: many texts at nearly one distance)."""
    rng = np.random.default_rng(5)
    uid = supabase.shim.create_user("repeats@example.com")
    vectors = fill(db, uid, chats=150, windows=8, rng=rng)
    query = near(rng, TOPICS, 1)[0]
    long_chats = {str(uuid.uuid4()): query + 0.05 * unit(rng, 60) for _ in range(3)}
    with db.cursor() as cur:
        for chat, windows in long_chats.items():
            windows = windows / np.linalg.norm(windows, axis=1, keepdims=True)
            vectors[chat] = windows
            cur.execute("INSERT INTO public.chats (id, user_id, turn_count) VALUES (%s, %s, 60)", (chat, uid))
            cur.executemany(
                "INSERT INTO public.chat_windows (chat_id, user_id, start_seq, end_seq, body, words, embedding,"
                " embedder) VALUES (%s, %s, %s, %s, 'again', '{}', %s::extensions.vector, %s)",
                [(chat, uid, i + 1, i + 1, literal(v), EMBEDDER) for i, v in enumerate(windows)],
            )
    db.execute("ANALYZE public.chat_windows")
    found, plans = search(db, uid, query, 10)
    assert uses_index(plans, "chat_windows_hnsw_256_m32"), "\n".join(plans)
    assert found == exact_top(vectors, query, 10)


def test_a_user_whose_rows_are_rare_still_gets_k_chats(supabase, db):
    """Another user holds 96% of the index; with the index forced (as when the planner picks it)
    the iterative scan reads on until the caller's rows are found, and the results are exact."""
    rng = np.random.default_rng(11)
    other = supabase.shim.create_user("other@example.com")
    rare = supabase.shim.create_user("rare@example.com")
    fill(db, other, chats=300, windows=8, rng=rng)
    mine = fill(db, rare, chats=12, windows=8, rng=rng)
    db.execute("ANALYZE")
    db.execute("SET enable_sort = off")  # no btree-and-sort plan: the HNSW index or nothing
    for query in near(rng, TOPICS, 5):
        found, plans = search(db, rare, query, 10)
        assert uses_index(plans, "chat_windows_hnsw_256_m32"), "\n".join(plans)
        assert found == exact_top(mine, query, 10)


def test_a_search_of_another_dimension_has_no_index_but_the_same_results(supabase, db):
    rng = np.random.default_rng(3)
    uid = supabase.shim.create_user("odd@example.com")
    chat = str(uuid.uuid4())
    db.execute("INSERT INTO public.chats (id, user_id) VALUES (%s, %s)", (chat, uid))
    v = unit(rng, 1, dim=200)[0]
    db.execute(
        "INSERT INTO public.chat_windows (chat_id, user_id, start_seq, end_seq, body, words, embedding, embedder)"
        " VALUES (%s, %s, 1, 1, 'x', '{}', %s::extensions.vector, 'odd')",
        (chat, uid, literal(v)),
    )
    db.execute("INSERT INTO public.memory_embedders (user_id, embedder, dim) VALUES (%s, 'odd', 200)", (uid,))
    found, _ = search(db, uid, v, 5)
    assert found == [chat]


async def test_a_reembed_commits_in_pages_and_switches_at_the_last(supabase, tmp_path):
    async with await signed_in_store(supabase, tmp_path) as store:
        chats = []
        for i in range(6):
            chat = (await store.create_chat(title=f"chat {i}")).chat
            await store.set_summary_text(chat.id, emb(f"about {i}", i), 0)
            chats.append(chat.id)
        old = await store.embedder_info()
        assert old is not None
        payload = [
            {
                "chat_id": t.ref.chat_id,
                "kind": "summary",
                "start_seq": 0,
                "end_seq": 0,
                "embedding": emb(t.text, 100 + n).vector.tolist(),
            }
            for n, t in enumerate(await store.embedded_texts())
        ]
        uid = await user_id(store)
        with psycopg.connect(supabase.dsn, autocommit=True) as conn:

            def call(sql: str, *args: object) -> int:
                row = conn.execute(sql, (*args, uid)).fetchone()
                assert row is not None
                return int(row[0])

            assert (
                call("SELECT public.stage_embeddings(%s::jsonb, 'new', true, p_user_id => %s)", json.dumps(payload))
                == 6
            )
            assert call("SELECT public.commit_embeddings('new', 4, p_user_id => %s)") == 2
            # midway the store still answers, from the two texts that keep the old embedder's vectors
            assert len(await store.search(emb("about 1", 1), 10)) == 2
            inside = [len(await store.search_chat(emb("about 1", 1), chat, 10)) for chat in chats]
            assert sorted(inside) == [0, 0, 0, 0, 1, 1]
            assert await store.embedder_info() == old
            assert call("SELECT public.commit_embeddings('new', 4, p_user_id => %s)") == 0
        assert await store.embedder_info() == ("new", old[1])
        assert len(await store.search(emb("about 1", 1, name="new"), 10)) == 6


def test_a_failed_concurrent_build_is_built_again(supabase, pg_cluster):
    """A build that failed leaves an invalid index and the migration unrecorded: the next
    `parla db migrate` drops the index, builds it again and applies the rest of the file."""
    name = psycopg.conninfo.conninfo_to_dict(supabase.dsn)["dbname"]
    links = next(m for m in migrations() if m.name == "parla_vector_index_links")
    alone, rest = links.parts()
    assert "chat_windows_hnsw_768_m32" in [n for _, n in alone]
    assert not any(line.lower().startswith("create index") for line in rest.splitlines())
    with psycopg.connect(supabase.dsn, autocommit=True) as conn:
        conn.execute(
            "UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'public.chat_windows_hnsw_768_m32'::regclass"
        )
        conn.execute("DELETE FROM supabase_migrations.schema_migrations WHERE version = %s", (links.version,))
    assert apply_migrations(pg_cluster.owner_dsn(name)) == [links]
    with psycopg.connect(supabase.dsn) as conn:
        row = conn.execute(
            "SELECT indisvalid FROM pg_index WHERE indexrelid = 'public.chat_windows_hnsw_768_m32'::regclass"
        ).fetchone()
        assert row == (True,)


def test_the_indexes_have_32_links_and_a_wide_build_search(supabase, db):
    """The defaults (m 16, ef_construction 64) left regions of a clustered 5,000-chat history
    unreached at 768 dims; each index is built with m 32 and ef_construction 256 instead, and the
    first indexes (the defaults) are gone."""
    rows = db.execute(
        "SELECT c.relname, c.reloptions FROM pg_class c JOIN pg_am a ON a.oid = c.relam WHERE a.amname = 'hnsw'"
    ).fetchall()
    names = {name for name, _ in rows}
    assert names == {f"{t}_hnsw_{d}_m32" for t in TABLES for d in (256, 768, 1536, 3072)}
    assert all(sorted(options) == ["ef_construction=256", "m=32"] for _, options in rows)


def test_an_index_that_misses_rows_is_found_and_built_again(supabase, caplog):
    """After a build, the check compares each index's nearest rows with an exact scan: a good
    index passes as built; one that cannot reach a part of its rows (here the rows rewritten
    while the index was not kept up to date: their new vectors are not in it) falls short, is
    built again without blocking writes, and agrees; with no builds again allowed it is reported."""
    rng = np.random.default_rng(3)
    with psycopg.connect(supabase.dsn, autocommit=True) as conn:
        uid = supabase.shim.create_user("heavy@example.com")
        fill(conn, uid, chats=200, windows=8, rng=rng)
        conn.execute("ANALYZE public.chat_windows")
    checked = check_vector_indexes(supabase.dsn, IndexCheck())
    assert [(c.index, c.rebuilds) for c in checked] == [("chat_windows_hnsw_256_m32", 0)]
    assert checked[0].agreement >= 0.99
    index = "'public.chat_windows_hnsw_256_m32'::regclass"
    with psycopg.connect(supabase.dsn, autocommit=True) as conn:
        conn.execute(f"UPDATE pg_index SET indisready = false WHERE indexrelid = {index}")
    with psycopg.connect(supabase.dsn, autocommit=True) as conn:
        rows = conn.execute("SELECT chat_id, start_seq FROM public.chat_windows WHERE start_seq <= 4").fetchall()
        moved = near(rng, TOPICS, len(rows))  # each row a vector of its own (HNSW keeps few duplicates)
        with conn.cursor() as cur:
            cur.executemany(
                "UPDATE public.chat_windows SET embedding = %s::extensions.vector WHERE chat_id = %s AND start_seq = %s",
                [(literal(v), chat, seq) for v, (chat, seq) in zip(moved, rows, strict=True)],
            )
        conn.execute(f"UPDATE pg_index SET indisready = true WHERE indexrelid = {index}")
    with caplog.at_level(logging.INFO, logger="parla.memory.store.supabase.schema"):
        (kept,) = check_vector_indexes(supabase.dsn, IndexCheck(rebuilds=0))
        assert kept.rebuilds == 0 and kept.agreement < 0.99
        assert "searches may miss chats" in caplog.text
        (mended,) = check_vector_indexes(supabase.dsn, IndexCheck())
    assert mended.rebuilds == 1 and mended.agreement >= 0.99
    assert "building it again" in caplog.text


def test_a_build_again_left_unfinished_is_dropped_by_the_next_check(supabase):
    """REINDEX CONCURRENTLY cut short leaves its new index invalid (named <index>_ccnew), still
    updated by every write: the next check drops it."""
    with psycopg.connect(supabase.dsn, autocommit=True) as conn:
        conn.execute(
            "CREATE INDEX chat_windows_hnsw_256_m32_ccnew ON public.chat_windows USING hnsw "
            "((embedding::extensions.halfvec(256)) extensions.halfvec_cosine_ops) "
            "WHERE extensions.vector_dims(embedding) = 256"
        )
        conn.execute(
            "UPDATE pg_index SET indisvalid = false "
            "WHERE indexrelid = 'public.chat_windows_hnsw_256_m32_ccnew'::regclass"
        )
    assert check_vector_indexes(supabase.dsn, IndexCheck()) == []  # no index has rows
    with psycopg.connect(supabase.dsn) as conn:
        assert conn.execute("SELECT to_regclass('public.chat_windows_hnsw_256_m32_ccnew')").fetchone() == (None,)


@pytest.mark.parametrize("name", ["parla_near_texts", "parla_vector_index_check"])
def test_a_migration_that_sets_hnsw_settings_applies_in_a_fresh_session(supabase, pg_cluster, name):
    """A project migrating from before this file, as the project's owner (not a superuser), in a
    session that has not touched a vector yet: the functions it creates set `hnsw.*`, which only
    a superuser may set before pgvector's library has defined them in the session ("permission
    denied to set parameter hnsw.iterative_scan")."""
    db_name = psycopg.conninfo.conninfo_to_dict(supabase.dsn)["dbname"]
    migration = next(m for m in migrations() if m.name == name)
    with psycopg.connect(supabase.dsn, autocommit=True) as conn:
        conn.execute("DELETE FROM supabase_migrations.schema_migrations WHERE version = %s", (migration.version,))
    assert apply_migrations(pg_cluster.owner_dsn(db_name)) == [migration]
