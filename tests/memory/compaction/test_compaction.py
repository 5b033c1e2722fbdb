"""Compaction invariants (property tests) and its behaviour under failure and concurrency."""

from __future__ import annotations

import asyncio
import logging

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from parla.memory.compaction.compactor import CompactionWorker, Compactor
from parla.memory.compaction.dual_memory import chunk_ranges, meta_ranges
from parla.memory.config import MemoryConfig
from parla.memory.errors import ModelError
from parla.memory.store.sqlite.store import SQLiteChatStore
from parla.memory.summarizers.extractive import ExtractiveSummarizer
from parla.records.errors import RangeError
from parla.records.summary import SummaryLevel
from parla.records.turn import MessageRange, Turn
from tests.conftest import make_turns

pytestmark = pytest.mark.tier("fast")

SMALL = MemoryConfig(
    summary_window_size=8, tail=3, chunk_size=4, meta_every=2, chunk_summarize_threshold=400, summary_token_cap=120
)


class FlakySummarizer(ExtractiveSummarizer):
    """The real extractive summarizer whose first `failures` rolling-summary calls fail, as a
    model call does on a timeout."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.calls = 0

    async def rolling_summary(self, existing: str, turns: list[Turn], cap_tokens: int) -> str:
        self.calls += 1
        if self.calls <= self.failures:
            raise ModelError("scripted failure")
        return await super().rolling_summary(existing, turns, cap_tokens)


class GatedSummarizer(ExtractiveSummarizer):
    """The real summarizer, but each rolling-summary call waits for the test to open a gate,
    so the test can act while a compaction is in flight; it also counts overlapping runs."""

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.gate = asyncio.Event()
        self.active = 0
        self.max_active = 0

    async def rolling_summary(self, existing: str, turns: list[Turn], cap_tokens: int) -> str:
        self.active += 1
        self.max_active = max(self.max_active, self.active)
        self.entered.set()
        await self.gate.wait()
        self.active -= 1
        return await super().rolling_summary(existing, turns, cap_tokens)


def test_chunk_and_meta_ranges():
    assert [str(r) for r in chunk_ranges(25, 10)] == ["1-10", "11-20"]
    assert chunk_ranges(9, 10) == []
    chunks = chunk_ranges(45, 10)
    assert [(str(span), len(group)) for span, group in meta_ranges(chunks, 2)] == [("1-20", 2), ("21-40", 2)]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=st.lists(st.integers(min_value=1, max_value=9), min_size=1, max_size=8))
async def test_invariants_hold_over_any_sequence_of_appends_and_compactions(tmp_path_factory, embedder, batches):
    path = tmp_path_factory.mktemp("prop") / "p.db"
    async with SQLiteChatStore(path) as store:
        compactor = Compactor(store, ExtractiveSummarizer(), embedder, SMALL)
        chat = (await store.create_chat()).chat
        appended: list[Turn] = []
        for size in batches:
            turns = make_turns(size, start=len(appended))
            await store.append_turns(chat.id, turns)
            appended += turns
            await compactor.compact(chat.id)

            history = await store.load_history(chat.id)
            c = history.chat
            # No turn of full_history is ever lost or reordered.
            assert [t.id for t in history.full_history] == [t.id for t in appended]
            assert [t.text for t in history.full_history] == [t.text for t in appended]
            # assistant_history is [summary turn] + the verbatim tail.
            tail = history.full_history[c.summarized_through :]
            if c.summarized_through:
                assert history.assistant_history[0].role == "model"
                assert c.rolling_summary in history.assistant_history[0].text
                assert history.assistant_history[1:] == tail
            else:
                assert history.assistant_history == history.full_history
            # The tail is never summarised: at least `tail` turns stay verbatim.
            assert len(tail) >= min(SMALL.tail, len(appended))
            # After a run nothing is left over the triggers.
            assert len(tail) <= SMALL.summary_window_size
            # Every complete chunk has its summary and facts; metas cover pairs of chunks.
            chunks = chunk_ranges(c.turn_count, SMALL.chunk_size)
            assert [s.range for s in await store.list_summaries(chat.id, SummaryLevel.CHUNK)] == chunks
            assert [f.range for f in await store.list_facts(chat.id)] == chunks
            metas = [span for span, _ in meta_ranges(chunks, SMALL.meta_every)]
            assert [s.range for s in await store.list_summaries(chat.id, SummaryLevel.META)] == metas


async def test_young_chat_is_described_by_its_opening_turns_and_titled_once_the_topic_is_clear(store, compactor):
    turns = make_turns(5)
    chat = (await store.create_chat(turns=turns[:3])).chat
    report = await compactor.compact(chat.id)
    chat = await store.get_chat(chat.id)
    assert report.described and chat.summarized_through == 0
    assert "Message 1." in chat.summary_text and chat.title is None  # 3 turns: too early to name it
    # the description and the two windows of what was said (turns 1-2 and 2-3)
    assert (await store.stats()).embedded_texts == 3
    assert not (await compactor.compact(chat.id)).described  # nothing new: nothing rewritten
    await store.append_turns(chat.id, turns[3:])
    report = await compactor.compact(chat.id)
    chat = await store.get_chat(chat.id)
    assert report.titled and chat.title == report.titled and chat.title_generated


def _exchange(user: str, model: str, details: list[str], count: int) -> list[Turn]:
    return [
        Turn.of("user" if i % 2 == 0 else "model", (user if i % 2 == 0 else model).format(details[i % len(details)]))
        for i in range(count)
    ]


def japan(count: int = 6, details: tuple[str, ...] = ("Kyoto hotel", "rail pass", "Tokyo flights", "temples")):
    return _exchange("For the trip to Japan, what about the {}?", "Book the {} in Japan early.", list(details), count)


def kitchen() -> list[Turn]:
    return _exchange(
        "The kitchen renovation: the {} is late again.",
        "Call the contractor about the {} for the kitchen today.",
        ["tiles", "electrician", "cabinets", "worktop", "sink"],
        40,
    )


async def test_a_generated_title_is_redone_when_the_chat_drifts_and_a_users_title_never(store, compactor):
    drifting = (await store.create_chat(turns=japan())).chat
    named = (await store.create_chat(title="Japan", turns=japan())).chat
    steady = (await store.create_chat(turns=japan())).chat
    for chat in (drifting, named, steady):
        await compactor.compact(chat.id)
    first = (await store.get_chat(drifting.id)).title
    assert first and "Japan" in first
    await store.append_turns(steady.id, japan(40, ("ryokan", "Osaka food", "visa")))
    for chat in (drifting, named):
        await store.append_turns(chat.id, kitchen())
    reports = {c.id: await compactor.compact(c.id) for c in (drifting, named, steady)}
    drifted = await store.get_chat(drifting.id)
    assert drifted.summarized_through > 0 and drifted.title_generated
    assert reports[drifting.id].titled == drifted.title and "Kitchen" in drifted.title
    assert (await store.get_chat(named.id)).title == "Japan" and reports[named.id].titled is None
    assert (await store.get_chat(steady.id)).title == first and reports[steady.id].titled is None


async def test_regenerating_a_range_is_idempotent(store, embedder):
    compactor = Compactor(store, ExtractiveSummarizer(), embedder, SMALL)
    chat = (await store.create_chat(turns=make_turns(17))).chat
    await compactor.compact(chat.id)
    before = (await store.list_summaries(chat.id), await store.list_facts(chat.id))
    for _ in range(2):
        report = await compactor.regenerate(chat.id, MessageRange(start=5, end=8))
        assert (report.chunk_summaries, report.fact_blocks, report.meta_summaries) == (1, 1, 1)
    after = (await store.list_summaries(chat.id), await store.list_facts(chat.id))
    assert [(s.level, s.range, s.text) for s in after[0]] == [(s.level, s.range, s.text) for s in before[0]]
    assert [(f.range, f.lines) for f in after[1]] == [(f.range, f.lines) for f in before[1]]
    everything = await compactor.regenerate(chat.id, None)
    assert (everything.chunk_summaries, everything.meta_summaries) == (4, 2)


@pytest.mark.parametrize("bad", ["3-6", "5-7", "5-20", "9-4"])
async def test_regenerate_rejects_ranges_that_are_not_whole_chunks(store, embedder, bad):
    compactor = Compactor(store, ExtractiveSummarizer(), embedder, SMALL)
    chat = (await store.create_chat(turns=make_turns(17))).chat
    start, end = map(int, bad.split("-"))
    with pytest.raises(RangeError, match="whole chunks"):
        await compactor.regenerate(chat.id, MessageRange(start=start, end=end))


async def test_a_turn_appended_while_compaction_runs_is_kept(store, embedder):
    summarizer = GatedSummarizer()
    compactor = Compactor(store, summarizer, embedder, SMALL)
    chat = (await store.create_chat(turns=make_turns(10))).chat
    run = asyncio.create_task(compactor.compact(chat.id))
    await summarizer.entered.wait()
    late = make_turns(2, start=10, prefix="late ")
    await store.append_turns(chat.id, late)
    summarizer.gate.set()
    await run
    history = await store.load_history(chat.id)
    assert [t.id for t in history.full_history[-2:]] == [t.id for t in late]
    assert history.chat.summarized_through == 7  # 10 turns seen, tail 3 kept
    assert [t.id for t in history.assistant_history[-2:]] == [t.id for t in late]


async def test_a_commit_that_lost_a_race_is_redone(tmp_path, embedder):
    path = tmp_path / "p.db"
    async with SQLiteChatStore(path) as store, SQLiteChatStore(path) as elsewhere:
        summarizer = GatedSummarizer()
        slow = Compactor(store, summarizer, embedder, SMALL)
        fast = Compactor(elsewhere, ExtractiveSummarizer(), embedder, SMALL)
        chat = (await store.create_chat(turns=make_turns(10))).chat
        run = asyncio.create_task(slow.compact(chat.id))
        await summarizer.entered.wait()
        await fast.compact(chat.id)  # another process compacts first
        await store.append_turns(chat.id, make_turns(9, start=10))
        summarizer.gate.set()
        report = await run
        final = await store.load_history(chat.id)
    assert report.turns_folded == 9  # its stale commit was refused and the rest folded afresh
    assert final.chat.compaction_version == 2 and final.chat.summarized_through == 16
    assert len(final.full_history) == 19


async def test_a_failed_model_call_leaves_the_chat_untouched_and_is_retried(store, embedder, caplog):
    flaky = FlakySummarizer(failures=2)
    compactor = Compactor(store, flaky, embedder, SMALL)
    chat = (await store.create_chat(turns=make_turns(10))).chat
    with pytest.raises(ModelError):
        await compactor.compact(chat.id)
    untouched = await store.get_chat(chat.id)
    assert (untouched.summarized_through, untouched.rolling_summary, untouched.compaction_version) == (0, "", 0)
    caplog.set_level(logging.INFO, logger="parla.compaction")
    async with CompactionWorker(compactor, retries=3, retry_delay=0.01) as worker:
        worker.schedule(chat.id)
        await worker.drain()
    assert flaky.calls == 3 and not worker.last_errors
    assert (await store.get_chat(chat.id)).summarized_through == 7
    lines = [r.getMessage() for r in caplog.records if r.name == "parla.compaction"]
    assert any("compaction retry" in line for line in lines)
    done = [line for line in lines if line.startswith("compaction chat_id=")]
    assert len(done) == 1 and "turns_folded=7" in done[0] and "tokens_before=" in done[0] and "duration_ms=" in done[0]


async def test_worker_gives_up_after_its_retries_and_reports(store, embedder):
    compactor = Compactor(store, FlakySummarizer(failures=100), embedder, SMALL)
    chat = (await store.create_chat(turns=make_turns(10))).chat
    async with CompactionWorker(compactor, retries=1, retry_delay=0.01) as worker:
        worker.schedule(chat.id)
        await worker.drain()
    assert "scripted failure" in worker.last_errors[chat.id]
    assert (await store.get_chat(chat.id)).summarized_through == 0


async def test_worker_is_single_flight_per_chat(store, embedder):
    summarizer = GatedSummarizer()
    compactor = Compactor(store, summarizer, embedder, SMALL)
    chat = (await store.create_chat(turns=make_turns(10))).chat
    async with CompactionWorker(compactor, concurrency=4) as worker:
        worker.schedule(chat.id)
        await summarizer.entered.wait()
        for _ in range(5):
            worker.schedule(chat.id)
        await store.append_turns(chat.id, make_turns(9, start=10))
        assert worker.pending == 1
        summarizer.gate.set()
        await worker.drain()
    assert summarizer.max_active == 1
    # The rerun requested during the first run folded what arrived meanwhile.
    assert (await store.get_chat(chat.id)).summarized_through == 16


async def test_worker_exit_cancels_running_compaction_without_damage(store, embedder):
    summarizer = GatedSummarizer()
    compactor = Compactor(store, summarizer, embedder, SMALL)
    chat = (await store.create_chat(turns=make_turns(10))).chat
    async with CompactionWorker(compactor) as worker:
        worker.schedule(chat.id)
        await summarizer.entered.wait()
    history = await store.load_history(chat.id)
    assert len(history.full_history) == 10 and history.chat.summarized_through == 0


async def test_token_threshold_triggers_and_long_histories_fold_in_bounded_steps(store, embedder, config):
    calls: list[int] = []

    class Counting(ExtractiveSummarizer):
        async def rolling_summary(self, existing, turns, cap_tokens):
            calls.append(len(turns))
            return await super().rolling_summary(existing, turns, cap_tokens)

    compactor = Compactor(store, Counting(), embedder, config)
    chat = (await store.create_chat(turns=make_turns(300))).chat
    report = await compactor.compact(chat.id)
    chat = await store.get_chat(chat.id)
    assert chat.summarized_through == 300 - config.tail and report.turns_folded == 288
    assert len(calls) > 1 and sum(calls) == 288  # several calls, none over the threshold
    assert report.tokens_after < report.tokens_before
    assert len(chat.rolling_summary) // 4 <= config.summary_token_cap


async def test_facts_come_from_the_raw_messages_in_parallel_with_the_chunk_summary(store, embedder):
    """Each chunk's facts are extracted from its stored turns (not from a summary of them), while
    its summary is being written: each call waits for the other to have started."""

    class Meeting(ExtractiveSummarizer):
        def __init__(self) -> None:
            self.summarising = asyncio.Event()
            self.extracting = asyncio.Event()
            self.fact_inputs: list[list[Turn]] = []

        async def chunk_summary(self, turns, cap_tokens):  # type: ignore[no-untyped-def]
            self.summarising.set()
            await asyncio.wait_for(self.extracting.wait(), 5)
            return await super().chunk_summary(turns, cap_tokens)

        async def facts(self, turns):  # type: ignore[no-untyped-def]
            self.extracting.set()
            await asyncio.wait_for(self.summarising.wait(), 5)
            self.fact_inputs.append(turns)
            return await super().facts(turns)

    summarizer = Meeting()
    config = SMALL.model_copy(update={"meta_every": 10})
    chat = (await store.create_chat(turns=make_turns(4))).chat
    report = await Compactor(store, summarizer, embedder, config).compact(chat.id)
    assert (report.chunk_summaries, report.fact_blocks) == (1, 1)
    (given,) = summarizer.fact_inputs
    assert given == await store.load_turns(chat.id, 1, 4)


async def test_turns_of_different_models_are_compacted_alike(tmp_path, embedder):
    """A chat whose answers came from several Live models (model_variant) gets the same summaries,
    facts and pins as the same chat answered by one."""
    said = make_turns(20)
    varied = [
        t.model_copy(update={"model_variant": f"gemini-live-{i % 3}"}) if t.role == "model" else t
        for i, t in enumerate(said)
    ]
    results = []
    for name, turns in (("one", said), ("many", varied)):
        async with SQLiteChatStore(tmp_path / f"{name}.db") as store:
            chat = (await store.create_chat(turns=turns)).chat
            await Compactor(store, ExtractiveSummarizer(), embedder, SMALL).compact(chat.id)
            after = await store.get_chat(chat.id)
            results.append(
                (
                    after.rolling_summary,
                    after.summarized_through,
                    [(str(s.range), s.text, s.importance) for s in await store.list_summaries(chat.id)],
                    [(str(f.range), f.lines) for f in await store.list_facts(chat.id)],
                    [(p.content, p.source_seq) for p in await store.list_pins(chat.id)],
                )
            )
    assert results[0] == results[1] and results[0][1] > 0


async def test_each_compaction_step_logs_its_duration(store, compactor, caplog):
    from tests.conftest import make_turns

    chat = (await store.create_chat(turns=make_turns(35))).chat
    with caplog.at_level("INFO", logger="parla.compaction"):
        report = await compactor.compact(chat.id)
    (record,) = [r for r in caplog.records if getattr(r, "event", None) == "compaction"]
    assert record.fold_ms == report.fold_ms > 0 and record.chunks_ms == report.chunks_ms > 0
    assert record.metas_ms == report.metas_ms >= 0
    assert report.fold_ms + report.chunks_ms + report.metas_ms <= report.duration_ms + 1
    assert f"fold_ms={report.fold_ms}" in record.getMessage()


@pytest.mark.tier("postgres")
async def test_compacting_a_new_chat_reads_it_once_per_step(supabase, tmp_path, embedder):
    """On Supabase each read is a request: compacting a chat that was never summarised (an
    imported one) reads the chat once, its turns for the windows and for each step of the fold,
    not once more per chunk, and a fold step goes on from the chat its commit returned."""
    from tests.conftest import signed_in_store

    async with await signed_in_store(supabase, tmp_path) as store:
        compactor = Compactor(store, ExtractiveSummarizer(), embedder, SMALL)
        chat = (await store.create_chat(turns=make_turns(17))).chat
        before = len(supabase.shim.log)
        report = await compactor.compact(chat.id)
        reads = [path for _, path, _ in supabase.shim.log[before:] if path.endswith("/rpc/load_chat")]
        assert report.chunk_summaries == 4
        assert len(reads) == 4, reads  # the chat; the turns for the windows, then at each of the fold's two steps
        assert [s.range for s in await store.list_summaries(chat.id, SummaryLevel.CHUNK)] == chunk_ranges(17, 4)
