"""Re-embedding in the background (memory/retrieval/reembed.py): offline vectors rebuilt with the Gemini
embedder through the REST emulator, with progress; meanwhile searches go by the old vectors (or by
words when their embedder cannot be used) and new vectors are refused with how far it is; a
failure leaves the old vectors whole."""

from __future__ import annotations

import asyncio
import logging

import pytest

from parla.daemon.memory_services import gemini_client
from parla.daemon.settings import Settings
from parla.memory.embedders.gemini import GeminiEmbedder
from parla.memory.retrieval.reembed import BackgroundReembed
from parla.memory.retrieval.search import ChatSearch
from parla.records.embedding import Embedder, TaskType, WrappedEmbedder
from tests.conftest import eventually, make_turns

pytestmark = pytest.mark.tier("fast")


def gemini_embedder(gemini) -> GeminiEmbedder:
    settings = Settings(
        gemini_api_key=gemini.api_key, gemini_base_url=gemini.base_url, model_retries=0, model_retry_delay=0.01
    )
    return GeminiEmbedder(gemini_client(settings))


class Held(WrappedEmbedder):
    """A real embedder whose calls wait until the test lets them through, so the test can look at
    a re-embed while it runs."""

    def __init__(self, inner: Embedder) -> None:
        super().__init__(inner)
        self.go = asyncio.Event()

    async def embed(self, texts: list[str], task: TaskType):
        await self.go.wait()
        return await self.inner.embed(texts, task)


async def offline_store(store, compactor) -> int:
    """Two compacted chats with offline vectors; how many texts are embedded."""
    for prefix in ("first ", "second "):
        chat = await store.create_chat(turns=make_turns(40, prefix=prefix))
        await compactor.compact(chat.chat.id)
    return (await store.stats()).embedded_texts


async def test_offline_vectors_are_rebuilt_in_the_background_with_progress(
    store, compactor, gemini, config, caplog, embedder
):
    caplog.set_level(logging.INFO, logger="parla.memory.retrieval.reembed")
    texts = await offline_store(store, compactor)
    new = Held(gemini_embedder(gemini))

    def previous(name: str, dim: int) -> Embedder | None:
        return embedder if (name, dim) == (embedder.name, embedder.dim) else None

    async with BackgroundReembed(store, new, batch=3, previous=previous) as background:
        guarded = background.embedder_while_running()
        await eventually(lambda: background.running, what="the re-embed to start")
        # meanwhile the old vectors serve: the request is embedded by the embedder that made them
        search = ChatSearch(store, guarded, config, serving=background.serving)
        during = await search.search("the wedding speech for my sister in Lisbon")
        assert during.by_words is None and during.candidates and during.candidates[0].similarity > 0
        assert gemini.calls("batchEmbedContents") == []  # the new embedder is held: nothing went to it
        # where the old embedder cannot be used (Gemini's vectors, no key), by words and titles, saying why
        by_words = await ChatSearch(store, guarded, config).search("laptops for software development")
        assert by_words.by_words is not None and f"being re-embedded with {new.name}" in by_words.by_words
        new.go.set()
        await background.wait()
        assert background.progress.state == "done" and background.progress.done == texts
    steps = [(r.done, r.total) for r in caplog.records if getattr(r, "event", "") == "reembed_progress"]
    assert steps[-1] == (texts, texts) and len(steps) == -(-texts // 3)
    assert await store.embedder_info() == (new.name, 768)
    result = await ChatSearch(store, guarded, config).search("the wedding speech for my sister in Lisbon")
    assert result.candidates and result.candidates[0].matched_text


async def test_a_failed_reembed_leaves_the_old_vectors_and_says_why(store, compactor, embedder, gemini):
    await offline_store(store, compactor)
    gemini.fail_next(400, times=10, message="Request payload size exceeds the limit")
    async with BackgroundReembed(store, gemini_embedder(gemini), batch=50, retries=1, retry_delay=0.01) as background:
        await background.wait()
        assert background.progress is not None and background.progress.state == "failed"
        assert "Request payload size exceeds the limit" in background.progress.describe()
    assert await store.embedder_info() == (embedder.name, embedder.dim)


async def test_a_store_that_cannot_answer_does_not_stop_the_owner(tmp_path, embedder):
    """The store is asked in the background: a closed store fails the re-embed, not the `async with`."""
    from parla.memory.store.sqlite.store import SQLiteChatStore

    closed = SQLiteChatStore(tmp_path / "closed.db")
    async with BackgroundReembed(closed, embedder, retries=1, retry_delay=0.01) as background:
        await background.wait()
    assert background.progress is not None and background.progress.state == "failed"
    assert background.progress.error


async def test_nothing_is_reembedded_when_the_vectors_are_the_embedders_own_or_none(store, compactor, embedder, gemini):
    async with BackgroundReembed(store, gemini_embedder(gemini)) as empty:
        await empty.wait()
        assert empty.progress is None
    await offline_store(store, compactor)
    async with BackgroundReembed(store, embedder) as background:
        await background.wait()
        assert background.progress is None and not background.running
    assert gemini.calls("batchEmbedContents") == []


async def test_the_old_vectors_embedder_is_found_when_it_can_be_used_here(store, gemini, embedder):
    """What the daemon gives the re-embed to keep the old vectors serving: the offline embedder
    always, a Gemini model only with a key."""
    from parla.daemon.memory_services import MemoryServices

    with_key = MemoryServices(Settings(gemini_api_key=gemini.api_key, gemini_base_url=gemini.base_url), store)
    assert with_key.embedder_of(embedder.name, embedder.dim).name == embedder.name
    old = with_key.embedder_of("gemini-gemini-embedding-001-768", 768)
    assert isinstance(old, GeminiEmbedder) and (old.model, old.dim) == ("gemini-embedding-001", 768)
    assert with_key.embedder_of("someone-else-768", 768) is None
    without = MemoryServices(Settings(gemini_api_key=""), store)
    assert without.embedder_of("gemini-gemini-embedding-001-768", 768) is None
    assert without.search.serving == without.reembedder.serving
