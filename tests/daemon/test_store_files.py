"""The Supabase store's outbox lives in the SQLite file at `store_path`: as private as the store."""

from __future__ import annotations

import stat

import pytest

from parla.daemon.stores import open_store
from tests.conftest import make_turns
from tests.daemon.conftest import supabase_settings

pytestmark = pytest.mark.tier("postgres")


async def test_the_outbox_file_is_private(supabase, tmp_path):
    path = tmp_path / "data" / "parla" / "parla.db"
    user = supabase.shim.create_user("ada@example.com")
    settings = supabase_settings(supabase, user, path)
    async with open_store(settings) as store:
        await store.create_chat(turns=make_turns(2))
        files = [path.parent, path, path.with_name("parla.db-wal"), path.with_name("parla.db-shm")]
        assert [stat.S_IMODE(p.stat().st_mode) for p in files] == [0o700, 0o600, 0o600, 0o600]
