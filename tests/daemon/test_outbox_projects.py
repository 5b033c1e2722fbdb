"""Writes queued for a Supabase project Parla no longer points at (its URL changed while they
waited) are kept and said: `parla status` and `parla doctor` name the project and how many wait,
`parla outbox` lists them, and the user sends them to their project (`parla outbox send` with the
old settings) or drops them on their word (`parla outbox drop`). Two projects: two databases of the
real Postgres, each behind its own PostgREST shim."""

from __future__ import annotations

import asyncio
import json

import pytest
from pydantic import SecretStr
from typer.testing import CliRunner

from parla.daemon.cli import app
from parla.daemon.settings import Settings
from parla.daemon.stores import open_store
from parla.memory.errors import StoreOffline, WriteQueued
from parla.records.progress import QueuedElsewhere
from tests.conftest import make_turns
from tests.daemon.conftest import running
from tests.daemon.test_daemon import ctl
from tests.peers.postgrest import PostgrestShim

pytestmark = pytest.mark.tier("audio")


def on(project, user: str, settings: Settings) -> Settings:
    return settings.model_copy(
        update={
            "store": "supabase",
            "supabase_url": project.url,
            "supabase_service_key": SecretStr(project.service_key),
            "supabase_user_id": user,
            "supabase_retry_attempts": 1,
        }
    )


async def queue_three(settings: Settings, project) -> str:
    """A chat on `project`, then two turns and a rename queued while it is away."""
    async with open_store(settings) as store:
        chat_id = (await store.create_chat(title="Old project", turns=make_turns(2))).chat.id
        project.shim.refuse()
        for turn in make_turns(2, start=2):
            with pytest.raises(StoreOffline):
                await store.append_turns(chat_id, [turn])
        with pytest.raises(WriteQueued):
            await store.rename_chat(chat_id, "Renamed while away")
    project.shim.recover()
    return chat_id


def parla(*args: str, **env: str):
    return CliRunner().invoke(app, list(args), env=env)


def env_of(settings: Settings) -> dict[str, str]:
    return {
        "PARLA_CONFIG_FILE": str(settings.store_path.with_name("none.toml")),
        "PARLA_STORE_PATH": str(settings.store_path),
        "PARLA_CONTROL_SOCKET": str(settings.control_socket),
        "PARLA_STORE": "supabase",
        "PARLA_SUPABASE_URL": str(settings.supabase_url),
        "PARLA_SUPABASE_SERVICE_KEY": settings.supabase_service_key.get_secret_value(),  # type: ignore[union-attr]
        "PARLA_SUPABASE_USER_ID": str(settings.supabase_user_id),
    }


async def test_writes_queued_for_the_old_project_are_said_and_sent_there(supabase, pg_cluster, daemon_settings):
    ada = supabase.shim.create_user("ada@example.com")
    old = on(supabase, ada, daemon_settings)
    chat_id = await queue_three(old, supabase)
    dsn = pg_cluster.new_database()
    with PostgrestShim(dsn) as shim:  # the user moves to a new project
        new_project = type(supabase)(dsn, shim)
        new = on(new_project, shim.create_user("ada@example.com"), daemon_settings)
        async with running(new, "New project"):
            outbox = (await ctl(new, "status"))["outbox"]
            assert outbox["waiting"] == 0
            assert outbox["elsewhere"] == [{"project": supabase.url, "user": ada, "waiting": 3, "refused": 0}]
            shown = await asyncio.to_thread(parla, "status", **env_of(new))
            text = " ".join(shown.stdout.split())
            assert f"3 writes wait for another Supabase project, {supabase.url}" in text, shown.stdout
            assert "parla outbox" in text
        doctor = await asyncio.to_thread(parla, "doctor", **env_of(new))
        assert f"3 writes wait for {supabase.url}" in " ".join(doctor.stdout.split()), doctor.stdout
        listed = json.loads((await asyncio.to_thread(parla, "outbox", "list", "--json", **env_of(new))).stdout)
        assert listed == {
            "current": {"project": new_project.url, "waiting": 0, "refused": 0},
            "elsewhere": [{"project": supabase.url, "user": ada, "waiting": 3, "refused": 0}],
        }
        # sent to their project with its settings, as `parla outbox` says
        sent = await asyncio.to_thread(parla, "outbox", "send", **env_of(old))
        assert sent.exit_code == 0 and f"Sent 3 writes to {supabase.url}" in sent.stdout, sent.output
        after = json.loads((await asyncio.to_thread(parla, "outbox", "list", "--json", **env_of(new))).stdout)
        assert after["elsewhere"] == []
    pg_cluster.drop_database(dsn)
    async with open_store(old) as store:
        chat = await store.get_chat(chat_id)
    assert (chat.title, chat.turn_count) == ("Renamed while away", 4)


async def test_writes_queued_for_the_old_project_are_dropped_only_when_asked(supabase, daemon_settings, tmp_path):
    ada = supabase.shim.create_user("ada@example.com")
    old = on(supabase, ada, daemon_settings)
    chat_id = await queue_three(old, supabase)
    moved = {**env_of(old), "PARLA_SUPABASE_URL": "http://127.0.0.1:9"}  # a project not reachable now
    asked = await asyncio.to_thread(parla, "outbox", "drop", supabase.url, **moved)
    assert asked.exit_code == 1 and "--yes" in asked.output  # no terminal to ask on: nothing dropped
    assert json.loads((await asyncio.to_thread(parla, "outbox", "list", "--json", **moved)).stdout)["elsewhere"]
    dropped = await asyncio.to_thread(parla, "outbox", "drop", supabase.url, "--yes", **moved)
    assert dropped.exit_code == 0 and f"Dropped 3 writes queued for {supabase.url}" in dropped.stdout, dropped.output
    assert json.loads((await asyncio.to_thread(parla, "outbox", "list", "--json", **moved)).stdout)["elsewhere"] == []
    async with open_store(old) as store:  # nothing of them reached the old project
        chat = await store.get_chat(chat_id)
    assert (chat.title, chat.turn_count) == ("Old project", 2)


async def test_writes_left_when_the_store_went_back_to_sqlite_are_said(supabase, daemon_settings):
    ada = supabase.shim.create_user("ada@example.com")
    old = on(supabase, ada, daemon_settings)
    await queue_three(old, supabase)
    async with open_store(old.model_copy(update={"store": "sqlite"})) as store:  # PARLA_STORE=sqlite again
        assert (await store.pending_writes()).elsewhere == (QueuedElsewhere(supabase.url, ada, 3, 0),)
