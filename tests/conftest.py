"""Shared fixtures: a real SQLite store in a temp dir, the offline models, small memory knobs."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from memory.store.supabase import SupabaseChatStore
    from tests.peers.supabase_peer import PostgresCluster, SupabasePeer

from memory.compaction import Compactor
from memory.config import MemoryConfig
from memory.embedders.offline import OfflineEmbedder
from memory.store.sqlite import SQLiteChatStore
from memory.summarizers.extractive import ExtractiveSummarizer
from memory.turn import Turn
from tests.peers.gemini_rest import GeminiRestEmulator

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)

TOPICS = [
    "We compared two budget laptops with 16 GB of RAM for software development under 900 euros.",
    "My sister Anna gets married in Lisbon on June 14th and I need a speech for the dinner.",
    "The tomato seedlings on the balcony have yellow leaves after the cold night in March.",
    "I am learning the Chopin nocturne in E flat and the left hand jumps are too slow.",
]


def make_turns(n: int, start: int = 0, prefix: str = "") -> list[Turn]:
    """`n` alternating user/model turns with distinct, sentence-like text."""
    turns = []
    for i in range(start, start + n):
        topic = TOPICS[i % len(TOPICS)]
        role = "user" if i % 2 == 0 else "model"
        text = f"{prefix}Message {i + 1}. {topic} Point number {i + 1} was discussed in detail today."
        turns.append(Turn.of(role, text, created_at=T0 + timedelta(minutes=i)))
    return turns


@pytest.fixture
def config() -> MemoryConfig:
    return MemoryConfig()


@pytest.fixture
async def store(tmp_path) -> AsyncIterator[SQLiteChatStore]:
    async with SQLiteChatStore(tmp_path / "parla.db") as s:
        yield s


@pytest.fixture(scope="session")
def embedder() -> OfflineEmbedder:
    return OfflineEmbedder()


@pytest.fixture
def summarizer() -> ExtractiveSummarizer:
    return ExtractiveSummarizer()


@pytest.fixture
def compactor(store, summarizer, embedder, config) -> Compactor:
    return Compactor(store, summarizer, embedder, config)


@pytest.fixture
def gemini() -> Iterator[GeminiRestEmulator]:
    emulator = GeminiRestEmulator().start()
    yield emulator
    emulator.stop()


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[PostgresCluster]:
    from tests.peers.supabase_peer import PostgresCluster

    cluster = PostgresCluster()
    yield cluster
    cluster.close()


@pytest.fixture
def supabase(pg_cluster) -> Iterator[SupabasePeer]:
    """A fresh Supabase stand-in: its own database with the migrations applied, behind the shim."""
    from tests.peers.postgrest import PostgrestShim
    from tests.peers.supabase_peer import SupabasePeer

    dsn = pg_cluster.new_database()
    with PostgrestShim(dsn) as shim:
        yield SupabasePeer(dsn, shim)


async def signed_in_store(peer, tmp_path, email: str = "ada@example.com") -> SupabaseChatStore:
    """A store signed in as a new user through the shim's GoTrue, as `parla login` does."""
    from memory.store.supabase import SupabaseChatStore, sign_in

    peer.shim.create_user(email, "correct horse")
    session = tmp_path / f"session-{email}.json"
    await sign_in(peer.url, peer.anon_key, email, "correct horse", session)
    return await SupabaseChatStore.connect(
        peer.url, peer.anon_key, outbox_path=tmp_path / f"outbox-{email}.db", session_file=session
    )


@pytest.fixture(params=["sqlite", "supabase"])
async def any_store(request, tmp_path):
    """The contract suite runs once per store."""
    if request.param == "sqlite":
        async with SQLiteChatStore(tmp_path / "parla.db") as s:
            yield s
    else:
        async with await signed_in_store(request.getfixturevalue("supabase"), tmp_path) as s:
            yield s
