"""`say` through the daemon: each typed turn is a whole turn with its own answer, and what `say`
reports is what became of that very turn (not of a turn with a similar text)."""

from __future__ import annotations

import asyncio

import pytest

from tests.daemon.conftest import running
from tests.daemon.test_daemon import ctl
from tests.peers.live_emulator import echo

pytestmark = pytest.mark.tier("audio")


async def _history(mem, chat_id):
    return [(t.role, t.text) for t in (await mem.store.load_history(chat_id)).full_history]


async def test_concurrent_says_are_whole_turns_each_with_its_own_answer(daemon_settings, live):
    live.script = echo
    async with running(daemon_settings) as (_, mem, chat_id):
        await ctl(daemon_settings, "talk")
        texts = [f"concurrent {i}" for i in range(6)]
        answers = await asyncio.gather(*(ctl(daemon_settings, "say", text=t, wait=20, timeout=30) for t in texts))
        for text, answer in zip(texts, answers, strict=True):
            assert answer["result"] == "answered" and answer["answer"] == f"You said {text}.", (text, answer)
        history = await _history(mem, chat_id)
    assert sorted(history[::2]) == [("user", t) for t in texts]
    assert history[1::2] == [("model", f"You said {text}.") for _, text in history[::2]]


async def test_a_say_with_nul_or_a_lone_surrogate_is_reported_answered(daemon_settings, live):
    live.script = echo
    async with running(daemon_settings) as (_, mem, chat_id):
        for text, stored in (("nul\x00here", "nul\ufffdhere"), ("lone \ud800 half", "lone \ufffd half")):
            answer = await ctl(daemon_settings, "say", text=text, wait=10, timeout=20)
            assert answer == {"result": "answered", "answer": f"You said {stored}."}
        assert await _history(mem, chat_id) == [
            ("user", "nul\ufffdhere"),
            ("model", "You said nul\ufffdhere."),
            ("user", "lone \ufffd half"),
            ("model", "You said lone \ufffd half."),
        ]
