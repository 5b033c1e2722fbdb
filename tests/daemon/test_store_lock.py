"""The daemon while another program holds the SQLite store's write lock (`BEGIN IMMEDIATE`): what
`say` reports answered is stored or kept aside, a stop keeps what the store did not take in time
and says so, and the next start stores it, each turn once."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
from contextlib import contextmanager

import pytest
from typer.testing import CliRunner

from parla.daemon.cli import app
from parla.daemon.control import send_command
from parla.daemon.memory_services import open_memory
from parla.memory.store.refused import RefusedTurns
from tests.conftest import eventually
from tests.daemon.conftest import running
from tests.daemon.test_daemon_crash import _start
from tests.peers.live_emulator import echo

pytestmark = pytest.mark.tier("audio")


@contextmanager
def write_lock(path):
    """Another program's write lock on the store until the block ends."""
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        holder.execute("ROLLBACK")
        holder.close()


async def _history(settings, chat_id):
    async with open_memory(settings) as mem:
        return [(t.role, t.text) for t in (await mem.store.load_history(chat_id)).full_history]


async def test_say_reports_answered_only_once_stored_or_kept_aside(daemon_settings, live):
    live.script = echo
    env = {"PARLA_CONTROL_SOCKET": str(daemon_settings.control_socket)}
    kept = RefusedTurns(RefusedTurns.beside(daemon_settings.store_path))
    async with running(daemon_settings) as (_, mem, chat_id):
        await send_command(daemon_settings.control_socket, "talk")
        with write_lock(daemon_settings.store_path):
            said = await asyncio.to_thread(CliRunner().invoke, app, ["say", "the milk", "--wait", "2"], env=env)
            assert said.exit_code == 0, said.output
            assert (
                said.stdout
                == f"Answered, not stored yet (kept in {kept.path} until the store takes it): You said the milk.\n"
            )
            assert [(k.chat_id, k.turn.text) for k in kept.read()] == [
                (chat_id, "the milk"),
                (chat_id, "You said the milk."),
            ]
        # the lock is gone: the session stores the turns, and a say is answered once stored
        said = await asyncio.to_thread(CliRunner().invoke, app, ["say", "and eggs", "--wait", "10"], env=env)
        assert said.stdout == "Answered: You said and eggs.\n"
        assert (await mem.store.get_chat(chat_id)).turn_count == 4
    async with running(daemon_settings):  # the next start replays what was kept: nothing twice
        assert kept.read() == []
    assert await _history(daemon_settings, chat_id) == [
        ("user", "the milk"),
        ("model", "You said the milk."),
        ("user", "and eggs"),
        ("model", "You said and eggs."),
    ]


@pytest.mark.tier("process")
async def test_a_stop_while_the_store_is_locked_keeps_the_turns_and_the_next_start_stores_them(
    daemon_settings, live, tmp_path
):
    live.script = echo
    socket = daemon_settings.control_socket
    env = {
        **os.environ,
        "PARLA_CONFIG_FILE": str(tmp_path / "none.toml"),
        "PARLA_STORE_PATH": str(daemon_settings.store_path),
        "PARLA_ACTIVATION": "push_to_talk",
        "PARLA_CONTROL_SOCKET": str(socket),
        "PARLA_LIVE_URL": live.url,
        "GEMINI_API_KEY": live.api_key,
        "PARLA_GEMINI_BASE_URL": daemon_settings.gemini_base_url,
        "PARLA_SUMMARIZER": "offline",
        "PARLA_UI_PORT": "0",
        "PARLA_UI_TOKEN_FILE": str(tmp_path / "ui-token"),
        "PARLA_SHUTDOWN_TIMEOUT_S": "4",
        "PARLA_SHUTDOWN_KEEP_S": "1",
        "PARLA_SAVE_DRAIN_S": "10",  # longer than the shutdown: the stop must not wait for it
    }
    proc = await _start(env, socket)
    try:
        chat_id = (await send_command(socket, "status"))["chat"]["id"]
        await send_command(socket, "talk")
        with write_lock(daemon_settings.store_path):
            await send_command(socket, "say", text="the milk")
            await live.wait_connections(1)
            await eventually(lambda: live.connections[0].of_kind("client_content"), what="the typed turn")
            await asyncio.sleep(1.0)  # answered, held for late transcription, queued for the store
            proc.send_signal(signal.SIGTERM)
            await asyncio.to_thread(proc.wait, 30)
    finally:
        if proc.poll() is None:
            proc.kill()
    stderr = proc.stderr.read().decode() if proc.stderr else ""
    kept = RefusedTurns(RefusedTurns.beside(daemon_settings.store_path))
    assert proc.returncode == 0, stderr
    assert "shutdown took longer" not in stderr
    assert stderr.rstrip().splitlines()[-1] == (
        f"Parla stopped; 2 turns the store did not take in time are kept in {kept.path} and stored at the next start."
    )
    assert [k.turn.text for k in kept.read()] == ["the milk", "You said the milk."]
    assert await _history(daemon_settings, chat_id) == []
    async with running(daemon_settings):
        assert kept.read() == []
    assert await _history(daemon_settings, chat_id) == [("user", "the milk"), ("model", "You said the milk.")]


async def test_a_stop_while_a_session_closes_on_a_locked_store_waits_no_longer_than_the_shutdown(
    daemon_settings, live, caplog
):
    live.script = echo
    settings = daemon_settings.model_copy(update={"save_drain_s": 60.0, "shutdown_timeout_s": 3.0})
    kept = RefusedTurns(RefusedTurns.beside(settings.store_path))
    async with running(settings) as (daemon, _, _):
        with write_lock(settings.store_path):
            await send_command(settings.control_socket, "say", text="the milk")
            first = await live.wait_connections(1)
            # answered, then closed for idleness (1 s): the session waits for the locked store
            await asyncio.wait_for(first.closed.wait(), 10)
            daemon.stop()
            await eventually(lambda: daemon.status.state == "stopping", timeout=10, what="the stop")
    assert not [r for r in caplog.records if "shutdown took longer" in r.message]
    assert daemon.status.kept_turns == 2
    assert [k.turn.text for k in kept.read()] == ["the milk", "You said the milk."]
