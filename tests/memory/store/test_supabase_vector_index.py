"""The Supabase store's HNSW indexes: a search through them answers as the exact scan, and the
planner does use them for the caller's rows (real Postgres + pgvector behind the shim)."""

from __future__ import annotations

import psycopg

from tests.conftest import signed_in_store
from tests.memory.store.test_sqlite_vector_file import DIM, add_chat, chat_vectors, exact, found, queries


async def test_a_search_through_the_indexes_answers_as_the_exact_scan(supabase, tmp_path):
    chats = {}
    async with await signed_in_store(supabase, tmp_path) as store:
        for seed in range(100):
            vectors = chat_vectors(seed, 2 + seed % 4)
            chats[await add_chat(store, vectors)] = vectors
        for query in queries(chats, 10):
            assert await found(store, query) == exact(chats, query, 5, 2)
    with psycopg.connect(supabase.dsn) as db:
        db.execute("SET enable_seqscan = off")  # a hundred chats are few enough to scan otherwise
        plan = db.execute(
            f"EXPLAIN SELECT chat_id FROM public.chat_windows WHERE user_id = gen_random_uuid() "
            f"AND extensions.vector_dims(embedding) = {DIM} ORDER BY embedding::extensions.halfvec({DIM}) "
            f"OPERATOR(extensions.<=>) %s::extensions.halfvec({DIM}) LIMIT 400",
            (str(queries(chats, 1)[0].tolist()),),
        ).fetchall()
    assert f"chat_windows_hnsw_{DIM}" in "\n".join(row[0] for row in plan)
