"""The background summary queue (memory/compaction/summary_queue.py) with Gemini through the REST emulator:
a 429 with Retry-After makes the chat wait that long, not fail and not fall to offline summaries;
calls are spaced to the rate; the queue outlives the worker and the store being reopened."""

from __future__ import annotations

import asyncio

import pytest

from parla.daemon.memory_services import MemoryServices
from parla.daemon.settings import Settings
from parla.kernel.tokens import estimate_tokens
from parla.memory.compaction.summary_queue import SummaryCost, summary_cost
from parla.memory.store.sqlite.store import SQLiteChatStore
from parla.records.summary import SummaryLevel
from tests.conftest import eventually, make_turns

pytestmark = pytest.mark.tier("fast")


def settings(gemini, tmp_path, **more) -> Settings:
    return Settings(
        store_path=tmp_path / "parla.db",
        gemini_api_key=gemini.api_key,
        gemini_base_url=gemini.base_url,
        embedder="offline",
        summarizer="gemini",
        model_retries=0,  # the client does not retry: what it would do with a 429 is ours to test
        **more,
    )


async def test_a_rate_limit_makes_a_queued_chat_wait_as_the_api_asks_then_gemini_summarises_it(gemini, tmp_path):
    s = settings(gemini, tmp_path, summary_calls_per_minute=600)
    async with SQLiteChatStore(s.store_path) as store:
        chat = (await store.create_chat(turns=make_turns(12))).chat
        await store.queue_summaries([chat.id])
        gemini.fail_next(429, message="Resource has been exhausted (e.g. check quota).", retry_after=1.5)
        mem = MemoryServices(s, store)
        async with mem.summary_worker as worker:
            await eventually(lambda: worker.progress.paused_until is not None, what="the pause")
            assert "429" in (await store.summary_queue()).last_error  # still queued, with why
            await eventually(lambda: worker.progress.done == 1, timeout=20, what="the chat to be summarised")
        assert (await store.summary_queue()).waiting == 0
        calls = gemini.calls(":generateContent")
        assert calls[1].at - calls[0].at >= 1.5  # the first answered 429: nothing was asked before Retry-After
        (summary,) = await store.list_summaries(chat.id, SummaryLevel.CHUNK)
        assert summary.text.startswith("Summary:")  # Gemini's (the emulator's), not an offline stand-in
        done = await store.get_chat(chat.id)
        assert done.title and done.summary_text


async def test_the_queue_outlives_its_worker_and_the_store_being_reopened(gemini, tmp_path):
    slow = settings(gemini, tmp_path, summary_calls_per_minute=3)  # 20 s between calls: stopped midway
    async with SQLiteChatStore(slow.store_path) as store:
        chats = [(await store.create_chat(turns=make_turns(12, prefix=f"{n} "))).chat for n in range(2)]
        await store.queue_summaries([c.id for c in chats])
        async with MemoryServices(slow, store).summary_worker as worker:
            await eventually(lambda: gemini.calls(":generateContent"), timeout=10, what="a first call")
            assert worker.progress.current == chats[0].id
        state = await store.summary_queue()
        assert state.waiting == 2 and state.next_due_in_s < 5  # the one stopped midway is due again at once
    fast = settings(gemini, tmp_path, summary_calls_per_minute=600)
    async with SQLiteChatStore(fast.store_path) as reopened:  # a restart
        async with MemoryServices(fast, reopened).summary_worker as worker:
            worker.wake()
            await eventually(lambda: worker.progress.done == 2, timeout=20, what="both chats")
        for c in chats:
            assert await reopened.list_summaries(c.id, SummaryLevel.CHUNK)


async def test_the_cost_estimate_counts_the_calls_compaction_makes(gemini, tmp_path):
    s = settings(gemini, tmp_path, summary_calls_per_minute=6000)
    lengths = [3, 12, 45]
    async with SQLiteChatStore(s.store_path) as store:
        ids = []
        for n in lengths:
            turns = make_turns(n, prefix=f"{n} ")
            ids.append((await store.create_chat(title=f"chat {n}", turns=turns)).chat.id)
        cost = sum(
            (summary_cost([estimate_tokens(t.transcript_line()) for t in make_turns(n)], True, s) for n in lengths),
            start=SummaryCost(),
        )
        await store.queue_summaries(ids)
        async with MemoryServices(s, store).summary_worker as worker:
            worker.wake()
            await eventually(lambda: worker.progress.done == 3, timeout=30, what="the three chats")
    made = len(gemini.calls(":generateContent"))
    print(f"estimated {cost.calls} calls, {cost.input_tokens} tokens; made {made} calls")
    assert cost.chats == 3 and abs(cost.calls - made) <= max(2, made // 5)


async def test_a_stop_that_comes_as_the_worker_is_woken_ends_it(gemini, tmp_path):
    """Chats queued (the wake) in the same moment as the daemon stops (the cancel): the worker ends.
    With `asyncio.wait_for` around its wait, Python 3.11 let the finished wait win, lost the
    cancellation, and leaving the worker waited for good."""
    async with SQLiteChatStore(tmp_path / "parla.db") as store:
        for _ in range(3):
            worker = MemoryServices(settings(gemini, tmp_path), store).summary_worker
            await worker.__aenter__()
            await asyncio.sleep(0.3)  # it found the queue empty and waits
            worker.wake()
            async with asyncio.timeout(5):
                await worker.__aexit__(None, None, None)
