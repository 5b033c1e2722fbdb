"""Files of another user at the paths Parla reads its data from are refused, with the fix, and
nothing in them is used: the SQLite store (and its -wal file), the Supabase store's outbox (whose
queued writes would go out with this user's credentials), the local copy and the signed-in
session (whose account would receive this user's chats). Root makes the files another user's
(uid 65534, nobody), as tests/daemon/test_control.py does; .ci/run runs these again with Python
and the checkout in a 0700 folder."""

from __future__ import annotations

import asyncio
import json
import os
import stat
from pathlib import Path

import pytest

from parla.daemon.settings import Settings
from parla.daemon.stores import open_store
from parla.memory.errors import WriteQueued
from tests.conftest import make_turns
from tests.daemon.conftest import supabase_settings
from tests.peers.postgrest import ANON_KEY

pytestmark = [
    pytest.mark.tier("postgres"),
    pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a file to another user"),
]

NOBODY = 65534


def theirs(path: Path, mode: int = 0o666) -> None:
    """`path` made another user's, writable by all, as a planted file would be."""
    os.chown(path, NOBODY, NOBODY)
    os.chmod(path, mode)


def untouched(path: Path) -> bool:
    st = path.stat()
    return st.st_uid == NOBODY and stat.S_IMODE(st.st_mode) == 0o666


@pytest.mark.parametrize("planted", ["parla.db", "parla.db-wal"])
def test_a_sqlite_store_of_another_user_is_refused(parla, tmp_path, planted):
    parla("stats")  # the store made
    path = tmp_path / planted
    if not path.exists():  # a -wal file with the frames another user chose, beside the user's store
        path.write_bytes(b"")
    theirs(path)
    refused = parla("chats", ok=False)
    assert refused.exit_code == 1
    message = " ".join(refused.output.split())
    assert f"{tmp_path / 'parla.db'} is not used: {path} belongs to another user (uid {NOBODY})" in message
    assert "move it aside" in message
    assert untouched(path)  # not tightened, not written


async def _queued_delete(settings: Settings, supabase) -> str:
    """A chat on the server, and its delete queued in the outbox while the server was away."""
    async with open_store(settings) as store:
        chat_id = (await store.create_chat(title="Keep me", turns=make_turns(2))).chat.id
        supabase.shim.refuse()
        with pytest.raises(WriteQueued):
            await store.delete_chat(chat_id)
    supabase.shim.recover()
    return chat_id


def test_an_outbox_of_another_user_is_refused_and_nothing_in_it_is_sent(parla, supabase, tmp_path, monkeypatch):
    user = supabase.shim.create_user("ada@example.com")
    settings = supabase_settings(supabase, user, tmp_path / "parla.db")
    chat_id = asyncio.run(_queued_delete(settings, supabase))
    theirs(settings.store_path)
    for name, value in (
        ("PARLA_STORE", "supabase"),
        ("PARLA_SUPABASE_URL", supabase.url),
        ("PARLA_SUPABASE_SERVICE_KEY", supabase.service_key),
        ("PARLA_SUPABASE_USER_ID", user),
    ):
        monkeypatch.setenv(name, value)
    refused = parla("chats", ok=False)
    message = " ".join(refused.output.split())
    assert refused.exit_code == 1 and f"{settings.store_path} is not used" in message, refused.output
    assert f"belongs to another user (uid {NOBODY})" in message
    assert untouched(settings.store_path)
    # the queued delete never went out: the chat is still there for a device with its own files
    fresh = supabase_settings(supabase, user, tmp_path / "other" / "parla.db")
    assert asyncio.run(_title(fresh, chat_id)) == "Keep me"


async def _title(settings: Settings, chat_id: str) -> str | None:
    async with open_store(settings) as store:
        return (await store.get_chat(chat_id)).title


async def test_a_local_copy_of_another_user_is_refused(supabase, tmp_path):
    user = supabase.shim.create_user("ada@example.com")
    settings = supabase_settings(supabase, user, tmp_path / "parla.db")
    async with open_store(settings) as store:
        await store.create_chat(title="Japan", turns=make_turns(2))
    theirs(settings.copy_path)
    with pytest.raises(Exception, match=f"{settings.copy_path} is not used: .*another user"):
        async with open_store(settings):
            pass
    assert untouched(settings.copy_path)


def test_a_session_of_another_user_is_refused_until_parla_login(parla, supabase, tmp_path, monkeypatch):
    session = tmp_path / "cfg" / "session.json"
    for name, value in (
        ("PARLA_STORE", "supabase"),
        ("PARLA_SUPABASE_URL", supabase.url),
        ("PARLA_SUPABASE_KEY", ANON_KEY),
        ("PARLA_SUPABASE_SESSION_FILE", str(session)),
    ):
        monkeypatch.setenv(name, value)
    supabase.shim.create_user("eve@example.com", "eve's password")
    supabase.shim.create_user("ada@example.com", "correct horse")
    parla("login", "--email", "eve@example.com", "--password", "eve's password")  # another user's session
    theirs(session)
    refused = parla("chats", ok=False)
    message = " ".join(refused.output.split())
    assert refused.exit_code == 1 and f"session file {session} is not used" in message, refused.output
    assert "parla login" in message
    assert untouched(session)
    parla("login", "--email", "ada@example.com", "--password", "correct horse")
    assert session.stat().st_uid == os.getuid() and stat.S_IMODE(session.stat().st_mode) == 0o600
    assert json.loads(parla("chats", "--json").stdout) == []  # ada's, who has none yet
