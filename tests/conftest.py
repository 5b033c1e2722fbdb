"""Shared fixtures: a real SQLite store in a temp dir, the offline models, small memory knobs."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from datetime import datetime, timedelta, timezone

import pytest

from memory.compaction import Compactor
from memory.config import MemoryConfig
from memory.embedders.offline import OfflineEmbedder
from memory.store.sqlite import SQLiteChatStore
from memory.summarizers.extractive import ExtractiveSummarizer
from memory.turn import Turn
from tests.peers.gemini_rest import GeminiRestEmulator

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=timezone.utc)

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
