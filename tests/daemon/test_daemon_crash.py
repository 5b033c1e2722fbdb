"""kill -9 and restart: the daemon runs as its own process on the Supabase store (real Postgres
behind the PostgREST shim). The shim commits a turn but loses the answer, so the turns stay in the
local outbox; the daemon is killed with SIGKILL; the restarted daemon replays the outbox and the
chat holds each turn exactly once. The restarted daemon is then stopped with SIGTERM, as systemd
stops it, and exits 0."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys

import psycopg
import pytest

from parla.daemon.control import DaemonNotRunning, send_command
from parla.memory.store.supabase.session import sign_in
from parla.memory.store.supabase.store import SupabaseChatStore
from tests.conftest import eventually
from tests.daemon.conftest import process_env
from tests.peers.live_emulator import tone

pytestmark = pytest.mark.tier("process")


async def _start(env: dict[str, str], socket) -> subprocess.Popen[bytes]:
    # starting it does not block; only waiting for it would
    proc = subprocess.Popen([sys.executable, "-m", "parla.daemon", "run"], env=env, stderr=subprocess.PIPE)  # noqa: ASYNC220

    async def up() -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"the daemon exited: {proc.stderr.read().decode() if proc.stderr else ''}")
        try:
            await send_command(socket, "status", timeout=2)
        except DaemonNotRunning:
            return False
        return True

    await eventually(up, timeout=30, what="the daemon to start")
    return proc


async def test_kill_9_then_restart_replays_the_outbox_without_duplicates(
    supabase, pulse, live, gemini, live_certificate, tmp_path
):
    supabase.shim.create_user("ada@example.com", "correct horse")
    session = tmp_path / "session.json"
    await sign_in(supabase.url, supabase.anon_key, "ada@example.com", "correct horse", session)
    socket = tmp_path / "ctl.sock"
    env = process_env(
        pulse,
        live,
        gemini,
        live_certificate,
        tmp_path,
        PARLA_STORE="supabase",
        PARLA_SUPABASE_URL=supabase.url,
        PARLA_SUPABASE_KEY=supabase.anon_key,
        PARLA_SUPABASE_SESSION_FILE=str(session),
        PARLA_STORE_PATH=str(tmp_path / "outbox.db"),
        PARLA_CONTROL_SOCKET=str(socket),
    )

    async def script(conn):
        await conn.complete_setup()
        await conn.expect("client_content")
        supabase.shim.drop = "after"  # from now on the server commits, but the answer never arrives
        await conn.reply("I will remember the milk", tone(0.2, 500.0))
        await conn.closed.wait()

    live.script = script
    proc = await _start(env, socket)
    try:
        chat_id = (await send_command(socket, "status"))["chat"]["id"]
        await send_command(socket, "say", text="remember the milk")

        async def committed_but_queued() -> bool:
            if proc.poll() is not None:
                raise AssertionError(f"the daemon exited: {proc.stderr.read().decode() if proc.stderr else ''}")
            with psycopg.connect(supabase.dsn) as db:
                stored = db.execute("SELECT count(*) FROM public.chat_turns WHERE chat_id = %s", (chat_id,)).fetchone()
            return stored == (2,) and (await send_command(socket, "status"))["outbox"]["waiting"] > 0

        # committed on the server, but the answer was lost: the outbox still holds the turns
        await eventually(committed_but_queued, timeout=15, what="the turns committed and still in the outbox")
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    supabase.shim.drop = None

    proc = await _start(env, socket)
    try:

        async def replayed() -> bool:
            outbox = (await send_command(socket, "status"))["outbox"]
            return outbox == {
                "waiting": 0,
                "refused": 0,
                "set_aside": 0,
                "problem": None,
                "offline": False,
                "elsewhere": [],
            }

        await eventually(replayed, timeout=15, what="the outbox to be replayed")
        proc.send_signal(signal.SIGTERM)  # as systemd stops it
        await asyncio.to_thread(proc.wait, 20)
        assert proc.returncode == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    reader = tmp_path / "reader.json"
    await sign_in(supabase.url, supabase.anon_key, "ada@example.com", "correct horse", reader)
    check = await SupabaseChatStore.connect(
        supabase.url, supabase.anon_key, outbox_path=tmp_path / "reader.db", session_file=reader
    )
    async with check as store:
        history = (await store.load_history(chat_id)).full_history
    assert [(t.seq, t.role, t.text) for t in history] == [
        (1, "user", "remember the milk"),
        (2, "model", "I will remember the milk"),
    ]
