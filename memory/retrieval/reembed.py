"""Re-embedding: every embedded text of a store given a vector of another embedder, written in one
replacement so the store never holds the vectors of two.

`BackgroundReembed` is what the daemon runs when the configured embedder is not the one that made
the store's vectors (a key was added, so `auto` became Gemini; or the setting changed): one task,
owned by its `async with`, embedding `batch` texts a call with the new embedder and then switching
the vectors in one replacement. Until it finishes, the store's vectors are the old embedder's, so
they keep serving: `serving()` gives the old embedder when it can be used here (the offline one
always; Gemini with a key), and search embeds requests with it. A vector of the new embedder can
neither be compared with the old ones nor stored beside them, so `WhileReembedding` wraps the new
embedder and refuses every embedding with a `Reembedding` error that says how far the re-embed is
(compactions fail with that message, their data untouched, and run again at the chat's next turn;
a search whose old embedder cannot be used answers by words and titles)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Self

import numpy as np

from parla.kernel.tasks import cancel_and_wait
from parla.records.embedding import Embedder, TaskType, WrappedEmbedder
from parla.records.progress import ReembedProgress

from ..errors import Reembedding
from ..store.protocol import SearchIndex

log = logging.getLogger(__name__)


async def reembed(
    store: SearchIndex, embedder: Embedder, batch: int, on_progress: Callable[[int, int], None] | None = None
) -> int:
    """Embed every stored text with `embedder`, `batch` texts a call, and replace the store's
    vectors; `on_progress(done, total)` after each call. Returns how many texts were embedded."""
    texts = await store.embedded_texts()
    vectors: list[np.ndarray] = []
    for start in range(0, len(texts), batch):
        chunk = texts[start : start + batch]
        vectors.extend(await embedder.embed([t.text for t in chunk], "document"))
        if on_progress is not None:
            on_progress(start + len(chunk), len(texts))
    await store.replace_embeddings([(t.ref, v) for t, v in zip(texts, vectors, strict=True)], embedder.name)
    return len(texts)


class BackgroundReembed:
    """Re-embeds the store in the background when its vectors are not `embedder`'s (use with
    `async with`; leaving it cancels a re-embed still running, which leaves the old vectors whole).
    A failure is retried `retries` times, the delay doubling from `retry_delay`, then reported."""

    def __init__(
        self,
        store: SearchIndex,
        embedder: Embedder,
        batch: int = 64,
        retries: int = 3,
        retry_delay: float = 1.0,
        previous: Callable[[str, int], Embedder | None] | None = None,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.batch = batch
        self.retries = retries
        self.retry_delay = retry_delay
        self.progress: ReembedProgress | None = None
        self._task: asyncio.Task[None] | None = None
        self._previous = previous  # the embedder of a stored name and dimension, if it can be used here
        self._serving: Embedder | None = None

    async def __aenter__(self) -> Self:
        # The store is asked in the task: a store that cannot answer now must not stop its owner.
        self._task = asyncio.create_task(self._run(), name="reembed")
        return self

    async def __aexit__(self, *exc: object) -> None:
        await cancel_and_wait(self._task)

    @property
    def running(self) -> bool:
        return self.progress is not None and self.progress.state == "running"

    async def wait(self) -> None:
        """Until the re-embed (if any) has finished or failed."""
        if self._task is not None:
            await asyncio.shield(self._task)

    def serving(self) -> Embedder | None:
        """While the vectors are rebuilt: the embedder that made the ones still stored, when it can
        be used here; else None."""
        return self._serving if self.running else None

    def embedder_while_running(self) -> Embedder:
        """The embedder search and compaction use: `embedder`, refusing while the vectors are rebuilt."""
        return WhileReembedding(self.embedder, self)

    async def _run(self) -> None:
        for attempt in range(self.retries + 1):
            try:
                info = await self.store.embedder_info()
                if info is None or info == (self.embedder.name, self.embedder.dim):
                    return  # nothing stored yet, or already this embedder's
                progress = self._started(info)
                count = await reembed(self.store, self.embedder, self.batch, progress.step)
            except asyncio.CancelledError:
                raise
            except Exception as e:  # noqa: BLE001 - the old vectors stay whole; report, retry, then give up
                error = f"{type(e).__name__}: {e}"
                if attempt == self.retries:
                    self.progress = self.progress or ReembedProgress(self.embedder.name, "unknown")
                    self.progress.state, self.progress.error = "failed", error
                    log.error("%s", self.progress.describe(), extra={"event": "reembed_failed"})
                    return
                if self.progress is not None:
                    self.progress.error = error
                delay = self.retry_delay * 2**attempt
                log.warning("re-embed failed (%s); again in %.1f s", error, delay)
                await asyncio.sleep(delay)
                continue
            progress.state, progress.done, progress.total, progress.error = "done", count, count, None
            log.info(
                "re-embedded %d texts with %s",
                count,
                self.embedder.name,
                extra={"event": "reembed_done", "embedder": self.embedder.name, "texts": count},
            )
            return

    def _started(self, info: tuple[str, int]) -> ReembedProgress:
        if self.progress is None:
            self._serving = self._previous(*info) if self._previous is not None else None
            self.progress = ReembedProgress(self.embedder.name, f"{info[0]} ({info[1]} dims)")
            log.info(
                "re-embedding the chats: vectors by %s, the embedder is %s",
                self.progress.previous,
                self.embedder.name,
                extra={"event": "reembed_start", "embedder": self.embedder.name},
            )
        self.progress.state = "running"
        return self.progress


class WhileReembedding(WrappedEmbedder):
    """An embedder that refuses to embed while its store's vectors are being rebuilt for it: a
    query or a new vector of the new embedder cannot be compared with, or stored beside, the old
    vectors."""

    def __init__(self, inner: Embedder, reembed: BackgroundReembed) -> None:
        super().__init__(inner)
        self.reembed = reembed

    async def embed(self, texts: list[str], task: TaskType) -> np.ndarray:
        progress = self.reembed.progress
        if progress is not None and progress.state == "running":
            raise Reembedding(progress.describe())
        return await self.inner.embed(texts, task)
