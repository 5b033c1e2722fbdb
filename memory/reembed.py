"""Re-embedding: every embedded text of a store given a vector of another embedder, written in one
replacement so the store never holds the vectors of two."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from parla.memory.embedding import Embedder
from parla.memory.store import ChatStore


async def reembed(
    store: ChatStore, embedder: Embedder, batch: int, on_progress: Callable[[int, int], None] | None = None
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
