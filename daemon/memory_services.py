"""Builds the memory side from settings: the store, the embedder, the summarizer, the compactor
and chat search, opened and closed together. Each part imports its modules when first asked for:
`parla search` without a daemon needs the store, the embedder and the search alone, not the model
SDK, the summarizers, compaction or the model's tools (bench/cli_startup.py)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from .errors import ConfigError
from .settings import Settings
from .stores import open_store

if TYPE_CHECKING:
    from google import genai

    from parla.memory.compaction.compactor import CompactionWorker, Compactor
    from parla.memory.compaction.summary_queue import QueueProgress, SummaryWorker
    from parla.memory.embedders.gemini import GeminiAvailability
    from parla.memory.language.absolute_dates import DateReading
    from parla.memory.retrieval.reembed import BackgroundReembed
    from parla.memory.retrieval.search import ChatSearch
    from parla.memory.store.copy_fill import CopyFill
    from parla.memory.store.protocol import ChatStore
    from parla.memory.store.refused import RefusedTurns
    from parla.memory.summarizers import Summarizer
    from parla.records.embedding import Embedder

    from .start_chat import LastChat

NO_KEY = (
    "needs a Gemini API key: create one in Google AI Studio and set GEMINI_API_KEY "
    "(or PARLA_GEMINI_API_KEY, or gemini_api_key in the config file)"
)


def gemini_client(settings: Settings) -> genai.Client:
    from google import genai
    from google.genai import types

    if not settings.has_gemini_key:
        raise ConfigError(f"Gemini {NO_KEY}; the offline embedder and summarizer work without one")
    assert settings.gemini_api_key is not None
    retry = types.HttpRetryOptions(
        attempts=settings.model_retries + 1, initial_delay=settings.model_retry_delay, max_delay=30.0
    )
    # websockets.connect takes these from the async client args (the SDK passes on what it accepts).
    keepalive = {"ping_interval": settings.live_ping_interval_s, "ping_timeout": settings.live_ping_timeout_s}
    options = types.HttpOptions(retry_options=retry, base_url=settings.gemini_base_url, async_client_args=keepalive)
    return genai.Client(api_key=settings.gemini_api_key.get_secret_value(), http_options=options)


@dataclass
class MemoryServices:
    settings: Settings
    store: ChatStore

    @cached_property
    def client(self) -> genai.Client:
        return gemini_client(self.settings)

    @cached_property
    def gemini_availability(self) -> GeminiAvailability:
        """One for the client: when Gemini cannot be used, embedder and summarizer stop trying for a while."""
        from parla.memory.embedders.gemini import GeminiAvailability

        return GeminiAvailability(cooldown_s=self.settings.model_offline_cooldown_s)

    @cached_property
    def configured_embedder(self) -> Embedder:
        """The embedder the settings name (`auto`: Gemini with a key, else offline)."""
        from parla.memory.embedders.offline import OfflineEmbedder

        if self.settings.embedder_in_use == "gemini":
            if not self.settings.has_gemini_key:
                raise ConfigError(f"PARLA_EMBEDDER=gemini {NO_KEY}, or set PARLA_EMBEDDER=offline")
            from parla.memory.embedders.gemini import GeminiEmbedder

            # No offline fallback here: a store holds the vectors of one embedder only.
            return GeminiEmbedder(
                self.client,
                self.settings.embedding_model,
                self.settings.embedding_dim,
                availability=self.gemini_availability,
            )
        return OfflineEmbedder()

    @cached_property
    def reembedder(self) -> BackgroundReembed:
        """Rebuilds the store's vectors when they are another embedder's; the daemon runs it (`async with`)."""
        from parla.memory.retrieval.reembed import BackgroundReembed

        s = self.settings
        return BackgroundReembed(
            self.store,
            self.configured_embedder,
            s.reembed_batch,
            retries=s.model_retries,
            retry_delay=s.model_retry_delay,
            previous=self.embedder_of,
        )

    def embedder_of(self, name: str, dim: int) -> Embedder | None:
        """The embedder that makes vectors named `name` of `dim` dimensions, when it can be used here
        (the offline one always, a Gemini model with a key); else None."""
        from parla.memory.embedders.gemini import GeminiEmbedder
        from parla.memory.embedders.offline import OfflineEmbedder

        offline = OfflineEmbedder()
        if (name, dim) == (offline.name, offline.dim):
            return offline
        model = name.removeprefix("gemini-").removesuffix(f"-{dim}")
        if not self.settings.has_gemini_key:
            return None
        gemini = GeminiEmbedder(self.client, model, dim, availability=self.gemini_availability)
        return gemini if gemini.name == name else None

    @cached_property
    def embedder(self) -> Embedder:
        """The configured embedder, refusing with how far it is while a background re-embed runs."""
        return self.reembedder.embedder_while_running()

    @cached_property
    def summarizer(self) -> Summarizer:
        from parla.memory.summarizers.extractive import ExtractiveSummarizer

        if self.settings.summarizer == "gemini" and not self.settings.has_gemini_key:
            raise ConfigError(f"PARLA_SUMMARIZER=gemini {NO_KEY}, or set PARLA_SUMMARIZER=offline")
        if self.summarises_with_gemini:
            # imported only here: the Gemini SDK's import is a second of an offline import's time
            from parla.memory.summarizers.fallback import FallbackSummarizer
            from parla.memory.summarizers.gemini import GeminiSummarizer

            gemini = GeminiSummarizer(self.client, self.settings.summary_model, self.gemini_availability, self.settings)
            return FallbackSummarizer(gemini, ExtractiveSummarizer())
        return ExtractiveSummarizer()

    @cached_property
    def dates(self) -> DateReading:
        """Relative dates the user says are read in their zone, in the language they speak (the Live
        language's, English unset) and in English."""
        from parla.memory.language.absolute_dates import DateReading

        language = (self.settings.live_language or "en").split("-")[0].lower()
        return DateReading(self.settings.time_zone, tuple(dict.fromkeys([language, "en"])))

    @cached_property
    def compactor(self) -> Compactor:
        from parla.memory.compaction.compactor import Compactor

        return Compactor(self.store, self.summarizer, self.embedder, self.settings, self.dates)

    @property
    def summarises_with_gemini(self) -> bool:
        return self.settings.summarizer == "gemini" or (
            self.settings.summarizer == "auto" and self.settings.has_gemini_key
        )

    @property
    def summary_progress(self) -> QueueProgress:
        """What this process's summary worker did and does (the daemon's); nothing when none was
        made here: making one for a look (`parla ui`) would need the embedder and summarizer."""
        from parla.memory.compaction.summary_queue import QueueProgress, SummaryWorker

        worker = self.__dict__.get("summary_worker")  # made once by the cached property below
        return worker.progress if isinstance(worker, SummaryWorker) else QueueProgress()

    @cached_property
    def summary_worker(self) -> SummaryWorker:
        """Works the store's summary queue in the background (the daemon runs it, `async with`):
        with Gemini, its calls spaced to `summary_calls_per_minute` and no offline stand-in, so a
        rate limit or an outage makes a chat wait, not lose its Gemini summaries; on its own
        availability, so its rate limits do not stop the live chat's embeddings."""
        from parla.kernel.rate import CallSpacing
        from parla.memory.compaction.compactor import Compactor
        from parla.memory.compaction.summary_queue import SummaryWorker
        from parla.memory.embedders.gemini import GeminiAvailability
        from parla.memory.summarizers.extractive import ExtractiveSummarizer
        from parla.memory.summarizers.gemini import GeminiSummarizer

        s = self.settings
        if self.summarises_with_gemini:
            availability = GeminiAvailability(cooldown_s=s.model_offline_cooldown_s)
            spacing = CallSpacing(s.summary_calls_per_minute)
            summarizer: Summarizer = GeminiSummarizer(self.client, s.summary_model, availability, s, spacing)
        else:
            summarizer = ExtractiveSummarizer()
        # dates read as the foreground's compaction reads them: a queued import ends as `--offline` leaves it
        compactor = Compactor(self.store, summarizer, self.embedder, s, self.dates)
        return SummaryWorker(self.store, compactor, s.summary_lease_s, s.model_offline_cooldown_s)

    @cached_property
    def copy_fill(self) -> CopyFill | None:
        """Fills this device's copy with every chat on Supabase (the daemon runs it, `async with`);
        None for a store without a copy."""
        from parla.memory.store.copy_fill import CopyFill, filled_marker
        from parla.memory.store.local_copy import LocalCopyStore

        if not isinstance(self.store, LocalCopyStore):
            return None
        s = self.settings
        return CopyFill(
            self.store,
            filled_marker(s.copy_path),
            every_s=s.supabase_fill_every_s,
            pause_s=s.supabase_fill_pause_s,
            page=s.supabase_fill_page,
            after_s=s.supabase_fill_after_s,
        )

    @cached_property
    def refused(self) -> RefusedTurns:
        """Turns the store refused for good, kept beside the store's file."""
        from parla.memory.store.refused import RefusedTurns

        return RefusedTurns(RefusedTurns.beside(self.settings.store_path))

    @cached_property
    def last_chat(self) -> LastChat:
        """This device's note of where the user last was with Parla, beside the store's file."""
        from .start_chat import LastChat

        return LastChat(LastChat.beside(self.settings.store_path))

    @cached_property
    def held(self) -> RefusedTurns:
        """Turns a session holds back from the store a while (an answer the speaker still plays),
        kept on disk meanwhile; what an earlier run left there is stored at start."""
        from parla.memory.store.refused import RefusedTurns

        return RefusedTurns(RefusedTurns.held_beside(self.refused.path))

    @cached_property
    def search(self) -> ChatSearch:
        from parla.memory.retrieval.search import ChatSearch

        return ChatSearch(self.store, self.embedder, self.settings, serving=self.reembedder.serving)

    def compaction_worker(self, on_done: Callable[[str, bool], None] | None = None) -> CompactionWorker:
        """A background compaction worker with the settings' concurrency and retries (use with `async with`)."""
        from parla.memory.compaction.compactor import CompactionWorker

        s = self.settings
        return CompactionWorker(
            self.compactor,
            concurrency=s.compaction_concurrency,
            retries=s.model_retries,
            retry_delay=s.model_retry_delay,
            on_done=on_done,
        )

    @cached_property
    def reminder_wake(self) -> asyncio.Event:
        """Set when a reminder is set or cancelled here: the daemon's scheduler reads the store again."""
        return asyncio.Event()


@asynccontextmanager
async def open_memory(settings: Settings) -> AsyncIterator[MemoryServices]:
    async with open_store(settings) as store:
        yield MemoryServices(settings, store)
