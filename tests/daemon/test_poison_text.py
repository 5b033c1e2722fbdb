"""Text no store can hold, typed over the control socket: the turn is stored repaired (U+FFFD in
place of each lone surrogate) and the turns after it are stored too."""

from __future__ import annotations

import pytest

from tests.conftest import eventually
from tests.daemon.conftest import running
from tests.daemon.test_daemon import ctl
from tests.peers.live_emulator import tone

pytestmark = pytest.mark.tier("audio")

SAID = ["a \ud800 b", "one", "two", "three"]


async def test_a_typed_lone_surrogate_is_stored_repaired_and_blocks_nothing(daemon_settings, live):
    async def script(conn):
        await conn.complete_setup()
        answered = 0
        while answered < len(SAID):
            frame = await conn.expect("client_content", timeout=10)
            if frame.body.get("turn_complete"):  # not the seeded history
                await conn.reply(f"You said {frame.body['turns'][-1]['parts'][0]['text']}", tone(0.05, 600.0))
                answered += 1
        await conn.closed.wait()

    live.script = script
    async with running(daemon_settings) as (_daemon, mem, chat_id):
        for text in SAID:
            await ctl(daemon_settings, "say", text=text)
            n = 2 * (SAID.index(text) + 1)
            await eventually(lambda n=n: _stored(mem.store, chat_id, n), timeout=10, what=f"{n} turns stored")
        history = (await mem.store.load_history(chat_id)).full_history
    said = [t.text for t in history if t.role == "user"]
    assert said == ["a \ufffd b", "one", "two", "three"]
    assert len(history) == 8


async def _stored(store, chat_id: str, n: int) -> bool:
    return (await store.get_chat(chat_id)).turn_count >= n
