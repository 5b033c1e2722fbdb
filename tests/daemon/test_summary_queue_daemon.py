"""The daemon works the summary queue in the background (issue 26, item 2): chats an import
queued are summarised by Gemini (the REST emulator) at the rate allowed, a 429 with Retry-After
makes it wait without failing a chat, and `parla status` says how far it is."""

from __future__ import annotations

import asyncio
import json

import pytest
from typer.testing import CliRunner

from parla.daemon.cli import app
from parla.daemon.control import send_command
from parla.daemon.memory_services import open_memory
from tests.conftest import eventually, make_turns
from tests.daemon.conftest import running

pytestmark = pytest.mark.tier("audio")


async def test_queued_chats_are_summarised_in_the_background_and_status_says_how_far(daemon_settings, gemini):
    settings = daemon_settings.model_copy(
        update={"summarizer": "gemini", "embedder": "offline", "summary_calls_per_minute": 600, "model_retries": 0}
    )
    async with open_memory(settings) as mem:
        ids = [
            (await mem.store.create_chat(title=f"chat {n}", turns=make_turns(12, prefix=f"{n} "))).chat.id
            for n in range(2)
        ]
        await mem.store.queue_summaries(ids)
    gemini.fail_next(429, message="Resource has been exhausted", retry_after=2)
    async with running(settings) as (_daemon, mem, _chat):

        async def summaries() -> dict:
            return (await send_command(settings.control_socket, "status"))["summaries"]

        await eventually(lambda: gemini.calls(":generateContent"), timeout=10, what="a first call")
        paused = await summaries()
        assert paused["waiting"] == 2 and paused["paused_for_s"] and "429" in paused["last_error"]
        await eventually(lambda: _done(summaries()), timeout=30, what="both chats summarised")
        for cid in ids:
            assert (await mem.store.get_chat(cid)).summary_text
        env = {"PARLA_CONTROL_SOCKET": str(settings.control_socket)}
        text = await asyncio.to_thread(CliRunner().invoke, app, ["status"], env=env)
        assert "summaries: 0 chats waiting, 2 done since the start" in text.stdout


async def _done(pending) -> bool:
    state = await pending
    return state["waiting"] == 0 and state["done"] == 2


async def test_an_import_wakes_the_daemons_summary_queue(daemon_settings, tmp_path):
    """The worker looks at the queue every 30 s; chats `parla import` queued while the daemon runs
    are taken at once, as the import tells the daemon."""
    settings = daemon_settings.model_copy(update={"embedder": "offline", "import_offline_now_turns": 0})
    source = tmp_path / "chats.jsonl"
    source.write_text(
        "".join(
            json.dumps(
                {
                    "title": f"chat {n}",
                    "turns": [
                        {"role": "user", "text": f"question {n} about kayaks"},
                        {"role": "model", "text": f"answer {n} about paddles"},
                    ],
                }
            )
            + "\n"
            for n in range(3)
        )
    )
    env = {
        "PARLA_STORE_PATH": str(settings.store_path),
        "PARLA_CONTROL_SOCKET": str(settings.control_socket),
        "PARLA_CONFIG_FILE": str(tmp_path / "none.toml"),
        "PARLA_IMPORT_OFFLINE_NOW_TURNS": "0",
        "PARLA_EMBEDDER": "offline",
        "PARLA_GEMINI_API_KEY": "",
    }
    async with running(settings) as (_daemon, _mem, _chat):
        await asyncio.sleep(0.5)  # the worker found the queue empty and sleeps its 30 s
        result = await asyncio.to_thread(CliRunner().invoke, app, ["import", str(source)], env=env)
        assert result.exit_code == 0, result.output
        assert "summaries of 3 chats (6 turns) are queued" in result.stderr

        async def summaries() -> dict:
            return (await send_command(settings.control_socket, "status"))["summaries"]

        await eventually(lambda: _all_done(summaries(), 3), timeout=10, what="the imported chats summarised")


async def _all_done(pending, count: int) -> bool:
    state = await pending
    return state["waiting"] == 0 and state["done"] == count
