"""The store the daemon opens follows the settings that shape its requests."""

from __future__ import annotations

import numpy as np
import psycopg
import pytest

from parla.daemon.settings import Settings
from parla.daemon.stores import connect_supabase, open_store
from tests.daemon.conftest import supabase_settings
from tests.memory.store.sqlite.test_vector_file import crowded_store, right_answers

pytestmark = pytest.mark.tier("fast")


@pytest.mark.tier("postgres")
async def test_a_reembed_on_supabase_commits_as_many_vectors_a_request_as_the_setting_says(supabase, tmp_path):
    """PARLA_SUPABASE_COMMIT_PAGE: a project with a shorter statement timeout than Supabase's
    8 s for signed-in users needs smaller pages of re-embedded vectors."""
    user = supabase.shim.create_user("ada@example.com")
    with psycopg.connect(supabase.dsn, autocommit=True) as conn:
        (chat,) = conn.execute(
            "INSERT INTO public.chats (user_id, title, turn_count) VALUES (%s, 'seven texts', 2) RETURNING id", (user,)
        ).fetchone()
        conn.execute("INSERT INTO public.memory_embedders (user_id, embedder, dim) VALUES (%s, 'test-4', 4)", (user,))
        conn.execute(
            "INSERT INTO public.chat_summaries (chat_id, user_id, start_seq, end_seq, embedding, embedder, level, "
            "summary) SELECT %s, %s, g, g, '[0.5,0.5,0.5,0.5]'::extensions.vector, 'test-4', 0, 'chunk ' || g "
            "FROM generate_series(1, 7) g",
            (chat, user),
        )
    settings = supabase_settings(supabase, user, tmp_path / "parla.db", supabase_commit_page=3)
    rng = np.random.default_rng(2)
    async with await connect_supabase(settings) as store:
        texts = await store.embedded_texts()
        supabase.shim.log.clear()
        await store.replace_embeddings([(t.ref, rng.normal(size=8)) for t in texts], "test-8")
        commits = [path for _, path, _ in supabase.shim.log if path.endswith("/rpc/commit_embeddings")]
        assert len(texts) == 7 and len(commits) == 3
        assert await store.embedder_info() == ("test-8", 8)


async def test_the_sqlite_store_the_daemon_opens_searches_its_index_as_the_settings_say(tmp_path):
    """PARLA_INDEX_SHORTLIST_*: the chats a search shortlists by their signs follow the settings
    (the crowded store where a shortlist of 20 loses the best chats and a quarter does not)."""
    chats = await crowded_store(tmp_path / "parla.db")
    right = {}
    for share in (0.0, 0.25):
        settings = Settings(store_path=tmp_path / "parla.db", index_shortlist_min=20, index_shortlist_share=share)
        async with open_store(settings) as store:
            right[share] = await right_answers(store, chats)
    assert right[0.0] < 10
    assert right[0.25] == 20
