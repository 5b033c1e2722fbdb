"""An answer held back from the store while the speaker plays it (local detection: the user may
still cut it) is kept on disk meanwhile, with the daemon as its own process on a SQLite store: a
daemon killed with SIGKILL while a long answer plays, after the service sent all of it, stores it
whole at the next start, once; a daemon stopped with SIGTERM meanwhile stores it as it stops. The
held file is empty after either. A `parla say` waiting for such an answer is told it was answered,
kept in the held file, before it has played."""

from __future__ import annotations

import asyncio
import signal

import pytest

from parla.daemon.control import send_command
from parla.memory.store.sqlite.store import SQLiteChatStore
from tests.conftest import eventually
from tests.daemon.conftest import process_env
from tests.daemon.test_daemon_crash import _start
from tests.peers.live_emulator import LiveConnection, tone

pytestmark = pytest.mark.tier("process")

STORY = "Once upon a time a heron lived by the river and every morning it counted the boats going by"
ENDING = "And so the heron learnt that the boats were counting it too and they all lived on the river"
ANSWER_S = 10.0  # played in real time: the service sent it all at once, seconds before


async def _history(store_path, chat_id: str) -> list[tuple[str, str, bool]]:
    async with SQLiteChatStore(store_path) as store:
        return [(t.role, t.text, t.interrupted) for t in (await store.load_history(chat_id)).full_history]


async def test_an_answer_held_while_it_plays_survives_a_kill_9_and_a_stop(
    pulse, live, gemini, live_certificate, tmp_path
):
    socket = tmp_path / "ctl.sock"
    store_path = tmp_path / "parla.db"
    held = tmp_path / "parla.held.jsonl"
    env = process_env(pulse, live, gemini, live_certificate, tmp_path, PARLA_TURN_DETECTION="local")
    answers = iter([STORY, ENDING])
    sent: list[str] = []

    async def script(conn: LiveConnection) -> None:
        await conn.complete_setup()
        while (frame := await conn.expect("client_content", timeout=30)).seed or not frame.body["turn_complete"]:
            pass  # the seed of the session after the restart
        text = next(answers)
        assert await conn.reply(text, tone(ANSWER_S)), "the answer was cut"
        sent.append(text)
        await conn.closed.wait()

    live.script = script

    async def held_while_playing(asked: str, text: str, wait: float = 0) -> dict:
        """Asked, answered, sent in full, held past the transcript hold (0.5 s): on disk, not in the store."""
        said = await send_command(socket, "say", text=asked, wait=wait)
        await eventually(lambda: text in sent, timeout=30, what="the service to send the answer")
        await eventually(lambda: held.exists() and text in held.read_text(), timeout=15, what="the held file")
        await asyncio.sleep(1.0)
        assert text not in [t for _, t, _ in await _history(store_path, chat_id)], "stored before it was played"
        return said

    proc = await _start(env, socket)
    try:
        chat_id = (await send_command(socket, "status"))["chat"]["id"]
        await held_while_playing("tell me a story", STORY)
        proc.send_signal(signal.SIGKILL)  # seconds of the answer still to play
        await asyncio.to_thread(proc.wait, 10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert held.exists(), "the held answer was not on disk when the daemon was killed"

    proc = await _start(env, socket)
    try:
        status = await send_command(socket, "status")
        assert status["refused_turns"] == 0, "the held answer shows as kept"
        assert not held.exists(), "the held file was not emptied by the replay"
        # whole: how much of it was heard is not known
        assert await _history(store_path, chat_id) == [
            ("user", "tell me a story", False),
            ("model", STORY, False),
        ]
        # A `say` that waits 2 s is told the answer, held on disk while 8 s of it are still to play.
        said = await held_while_playing("and then?", ENDING, wait=2.0)
        assert said == {"result": "answered", "answer": ENDING, "stored": False, "kept": str(held)}, said
        proc.send_signal(signal.SIGTERM)  # as systemd stops it, while the answer plays
        assert await asyncio.to_thread(proc.wait, 20) == 0
        log = proc.stderr.read().decode() if proc.stderr else ""
    finally:
        if proc.poll() is None:
            proc.kill()
    assert not held.exists(), "the held file was not emptied when the answer was stored at the stop"
    assert await _history(store_path, chat_id) == [
        ("user", "tell me a story", False),
        ("model", STORY, False),
        ("user", "and then?", False),
        ("model", ENDING, False),
    ]
    # Said once, at the start after the kill; the stop stored the second answer itself.
    assert log.count("held turns stored") == 1, log[-3000:]
