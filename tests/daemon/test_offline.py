"""The daemon on the Supabase store when the store does not answer at start (the peer's network
cut with `refuse()`, the saved session's access token expired): it starts in the last chat from
this device's copy, talks, and `parla status` says what waits to be sent; everything reaches the
server once it is back."""

from __future__ import annotations

import asyncio
import json

import pytest
from pydantic import SecretStr
from typer.testing import CliRunner

from parla.daemon.cli import app
from parla.daemon.cli.voice import chat_for
from parla.daemon.memory_services import open_memory
from parla.daemon.supervisor import Daemon
from parla.memory.store.supabase.session import sign_in
from parla.records.turn import Turn
from tests.conftest import eventually
from tests.daemon.test_daemon import ctl
from tests.peers.live_emulator import tone

pytestmark = pytest.mark.tier("postgres")


async def test_the_daemon_starts_in_the_last_chat_and_talks_with_the_store_away(
    supabase, daemon_settings, live, tmp_path
):
    supabase.shim.create_user("ada@example.com", "correct horse")
    session = tmp_path / "session.json"
    await sign_in(supabase.url, supabase.anon_key, "ada@example.com", "correct horse", session)
    settings = daemon_settings.model_copy(
        update={
            "store": "supabase",
            "supabase_url": supabase.url,
            "supabase_key": SecretStr(supabase.anon_key),
            "supabase_session_file": session,
            "supabase_retry_attempts": 1,
            "supabase_retry_delay": 0.05,
            "supabase_retry_max_delay": 0.2,
        }
    )
    async with open_memory(settings) as mem:  # an earlier run, online
        said = [Turn.of("user", "Plan the Kyoto days."), Turn.of("model", "Two days in Kyoto, then Nara.")]
        japan = (await mem.store.create_chat(title="Japan", turns=said)).chat.id

    async def script(conn):
        await conn.complete_setup()
        frame = await conn.expect("client_content")
        while not frame.body.get("turn_complete"):  # the seeded history (from the copy) comes first
            frame = await conn.expect("client_content")
        await conn.reply("Nara has the deer park.", tone(0.2, 500.0))
        await conn.closed.wait()

    live.script = script
    _expire(session)  # its access token too: it cannot be refreshed before Supabase is back
    supabase.shim.refuse()
    async with open_memory(settings) as mem:
        started = await chat_for(mem, None, False)  # where something was last said, from this device's copy
        chat_id = started.chat_id
        assert (chat_id, started.title, started.why) == (japan, "Japan", "talked")
        daemon = Daemon(mem, chat_id)
        task = asyncio.create_task(daemon.serve())
        try:
            await asyncio.wait_for(daemon.ready.wait(), 10)
            assert (await ctl(settings, "say", text="And Nara?"))["result"] == "activating"
            connection = await live.wait_connections(1)
            seeded = await eventually(lambda: connection.of_kind("client_content"), what="the session to be seeded")
            assert "Two days in Kyoto" in str(seeded[0].body)  # the chat's memory, from the copy

            async def two_waiting() -> bool:
                return (await ctl(settings, "status"))["outbox"]["waiting"] == 1  # the exchange, in one write

            await eventually(two_waiting, timeout=10, what="the exchange to wait in the outbox")
            status = await ctl(settings, "status")
            assert status["chat"] == {"id": japan, "title": "Japan", "why": "talked"} and status["outbox"]["offline"]
            shown = await asyncio.to_thread(
                CliRunner().invoke, app, ["status"], env={"PARLA_CONTROL_SOCKET": str(settings.control_socket)}
            )
            assert "1 writes waiting to be sent" in shown.stdout and "store: unreachable" in shown.stdout

            supabase.shim.recover()
            history = await eventually(
                lambda: _history_once_sent(mem.store, japan), timeout=10, what="the outbox to be replayed"
            )
        finally:
            daemon.stop()
            await asyncio.wait_for(task, settings.shutdown_timeout_s + 5)
    assert [t.text for t in history] == [*(t.text for t in said), "And Nara?", "Nara has the deer park."]


def _expire(session_file) -> None:
    """The saved session as after a night away: its access token has expired."""
    saved = json.loads(session_file.read_text())
    for key, value in saved.items():
        saved[key] = json.dumps({**json.loads(value), "expires_at": 1})
    session_file.write_text(json.dumps(saved))


async def _history_once_sent(store, chat_id):
    if (await store.pending_writes()).waiting:
        return None
    return (await store.load_history(chat_id)).full_history
