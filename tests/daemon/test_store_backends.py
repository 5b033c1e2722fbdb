"""The registry of stores (`daemon.stores.BACKENDS`): every name PARLA_STORE accepts opens its
store, and the commands name it and report on it from its entry."""

from __future__ import annotations

from typing import get_args

import pytest

from parla.daemon.settings import Settings, StoreName
from parla.daemon.stores import BACKENDS, SQLITE, SUPABASE, backend, open_store
from parla.memory.store.local_copy import LocalCopyStore
from parla.memory.store.sqlite.store import SQLiteChatStore
from tests.conftest import make_turns
from tests.daemon.conftest import supabase_settings

pytestmark = pytest.mark.tier("fast")


def test_every_store_the_settings_accept_has_one_backend():
    assert set(get_args(StoreName)) == set(BACKENDS)
    assert all(name == entry.name for name, entry in BACKENDS.items())
    assert backend(Settings(store="supabase")) is SUPABASE and backend(Settings()) is SQLITE


async def test_the_sqlite_backend_opens_the_file_the_settings_name_and_reports_its_size(tmp_path):
    path = tmp_path / "parla.db"
    settings = Settings(store_path=path)
    async with open_store(settings) as store:
        assert isinstance(store, SQLiteChatStore) and store.path == path
        await store.create_chat(turns=make_turns(3))
    assert SQLITE.describe(settings) == f"SQLite {path}"
    assert SQLITE.size is not None and SQLITE.size(settings).model_dump()["turns"] == 3


@pytest.mark.tier("postgres")
async def test_the_supabase_backend_opens_the_project_with_this_devices_copy(supabase, tmp_path):
    user = supabase.shim.create_user("ada@example.com")
    settings = supabase_settings(supabase, user, tmp_path / "parla.db")
    async with open_store(settings) as store:
        assert isinstance(store, LocalCopyStore)
        chat = (await store.create_chat(turns=make_turns(2))).chat
        assert (await store.local.get_chat(chat.id)).turn_count == 2
    assert settings.copy_path.exists()
    assert SUPABASE.describe(settings) == f"Supabase {supabase.url}" and SUPABASE.size is None
