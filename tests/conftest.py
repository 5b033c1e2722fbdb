"""Shared fixtures: a real SQLite store in a temp dir, the offline models, small memory knobs."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from parla.memory.store.local_copy import LocalCopyStore
    from parla.memory.store.protocol import ChatStore
    from parla.memory.store.supabase.store import SupabaseChatStore
    from parla.voice.config import VoiceConfig
    from tests.peers.live_emulator import LiveEmulator
    from tests.peers.pulse import PulseServer
    from tests.peers.supabase_peer import PostgresCluster, SupabasePeer

from parla.memory.compaction.compactor import Compactor
from parla.memory.config import MemoryConfig
from parla.memory.embedders.offline import OfflineEmbedder
from parla.memory.store.sqlite.store import SQLiteChatStore
from parla.memory.summarizers.extractive import ExtractiveSummarizer
from parla.records.turn import Turn
from tests import tiers
from tests.peers.gemini_rest import GeminiRestEmulator

# The test tiers (tests/tiers.py): plain `pytest` runs the fast tier, `pytest --tier all` every tier.
pytest_addoption = tiers.pytest_addoption
pytest_configure = tiers.pytest_configure
pytest_make_collect_report = tiers.pytest_make_collect_report
pytest_collection_modifyitems = tiers.pytest_collection_modifyitems
pytest_report_header = tiers.pytest_report_header
pytest_runtest_protocol = tiers.pytest_runtest_protocol
pytest_terminal_summary = tiers.pytest_terminal_summary

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


@pytest.fixture(autouse=True)
def _process_state_restored() -> Iterator[None]:
    """A command run in this process (`main()`, typer's CliRunner) sets up the process as its own
    would: the root logger's level and handlers and the umask are put back after every test, so a
    later test's `caplog` and file modes do not depend on what ran before it."""
    root = logging.getLogger()
    level, handlers = root.level, root.handlers[:]
    umask = os.umask(0o022)
    os.umask(umask)
    yield
    root.setLevel(level)
    root.handlers[:] = handlers
    os.umask(umask)


# How long tests let a search wait for its embedding: the emulator's first embedding loads its model
SEARCH_EMBED_TIMEOUT_S = 60.0


@pytest.fixture
def config() -> MemoryConfig:
    # a busy machine must not turn a search by meaning into one by words (tests of that set their own)
    return MemoryConfig(search_embed_timeout_s=SEARCH_EMBED_TIMEOUT_S)


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
    pg_cluster.drop_database(dsn)


async def signed_in_store(peer, tmp_path, email: str = "ada@example.com") -> SupabaseChatStore:
    """A store signed in as a new user through the shim's GoTrue, as `parla login` does."""
    from parla.memory.store.supabase.session import sign_in
    from parla.memory.store.supabase.store import SupabaseChatStore

    peer.shim.create_user(email, "correct horse")
    session = tmp_path / f"session-{email}.json"
    await sign_in(peer.url, peer.anon_key, email, "correct horse", session)
    return await SupabaseChatStore.connect(
        peer.url, peer.anon_key, outbox_path=tmp_path / f"outbox-{email}.db", session_file=session
    )


async def send_queued(store: ChatStore) -> None:
    """Send what waits in the outbox and check that nothing waits or was refused after. Not a count
    of what this call sent: the background replay, which retries every 0.2 s at most in these
    stores, may send some of it first (a race that once failed CI)."""
    await store.flush()
    pending = await store.pending_writes()
    assert (pending.waiting, pending.refused) == (0, 0), pending


@asynccontextmanager
async def copied_store(peer, tmp_path, recheck_s: float = 30.0) -> AsyncIterator[LocalCopyStore]:
    """The Supabase store of one device with its local copy, as the daemon opens them."""
    from parla.memory.store.local_copy import LocalCopyStore
    from parla.memory.store.supabase.store import RetryPolicy

    remote = await signed_in_store(peer, tmp_path)
    remote.retry = RetryPolicy(attempts=1, delay=0.05, max_delay=0.2)
    async with remote, SQLiteChatStore(tmp_path / "copy.db") as local:
        yield LocalCopyStore(remote, local, recheck_s)


@pytest.fixture(
    params=[
        "sqlite",
        pytest.param("supabase", marks=pytest.mark.tier("postgres")),
        pytest.param("supabase-copy", marks=pytest.mark.tier("postgres")),
    ]
)
async def any_store(request, tmp_path):
    """The contract suite runs once per store (and on Supabase with this device's copy, as the daemon
    opens it); the Supabase runs are in the postgres tier, whatever their module's tier."""
    if request.param == "sqlite":
        async with SQLiteChatStore(tmp_path / "parla.db") as s:
            yield s
    elif request.param == "supabase-copy":
        async with copied_store(request.getfixturevalue("supabase"), tmp_path) as s:
            yield s
    else:
        async with await signed_in_store(request.getfixturevalue("supabase"), tmp_path) as s:
            yield s


@pytest.fixture(scope="session")
def pulse(tmp_path_factory) -> Iterator[PulseServer]:
    """A headless PulseAudio with a virtual microphone and speaker, the default devices of this
    test process (PortAudio started again if sounddevice was imported before it ran)."""
    from tests.peers.pulse import PulseServer

    server = PulseServer(tmp_path_factory.mktemp("pulse")).start()
    previous = os.environ.get("PULSE_SERVER")
    os.environ["PULSE_SERVER"] = server.env["PULSE_SERVER"]
    if "sounddevice" in sys.modules:
        # PortAudio lists the devices once, when it starts: a test that ran before this one
        # imported sounddevice (pyroomacoustics does, for the turn-taking corpus) and left it with
        # none. Started again, it finds this server's.
        import sounddevice

        sounddevice._terminate()
        sounddevice._initialize()
    yield server
    server.stop()
    if previous is None:
        os.environ.pop("PULSE_SERVER", None)
    else:
        os.environ["PULSE_SERVER"] = previous


@pytest.fixture(scope="session")
def live_certificate(tmp_path_factory) -> tuple[Path, Path]:
    from tests.peers.live_emulator import make_certificate

    return make_certificate(tmp_path_factory.mktemp("tls"))


@pytest.fixture
async def live(live_certificate) -> AsyncIterator[LiveEmulator]:
    """The Live-protocol emulator; a scripted assertion that failed inside it fails the test."""
    from tests.peers.live_emulator import LiveEmulator

    async with LiveEmulator(*live_certificate) as emulator:
        yield emulator
    if emulator.errors:
        raise emulator.errors[0]


@pytest.fixture
def live_client(live, gemini):
    """The real google-genai client, REST to the REST emulator, websockets to the Live emulator."""
    from google import genai
    from google.genai import types

    options = types.HttpOptions(base_url=gemini.base_url, async_client_args={"ssl": live.client_ssl()})
    return genai.Client(api_key=live.api_key, http_options=options)


@pytest.fixture
def voice_config(live) -> VoiceConfig:
    from parla.voice.config import VoiceConfig

    return VoiceConfig(
        live_url=live.url, reconnect_delay=0.05, reconnect_max_delay=0.2, save_drain_s=5, transcript_hold_s=0.1
    )


async def eventually(predicate, timeout: float = 5.0, what: str = "the condition"):
    """Poll an async or plain predicate until it is truthy; fail with `what` after `timeout`."""
    import asyncio
    import inspect

    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        value = predicate()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.02)
