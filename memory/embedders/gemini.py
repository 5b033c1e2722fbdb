"""Gemini embeddings through google-genai: `gemini-embedding-001` at 768 dims, documents embedded
as RETRIEVAL_DOCUMENT and spoken requests as RETRIEVAL_QUERY, in batches. Retries of 429/5xx
belong to the client's HttpRetryOptions (configured by the daemon), so they happen once, there."""

from __future__ import annotations

import numpy as np
from google import genai
from google.genai import errors, types

from memory.embedding import ModelError, TaskType, normalize_rows
from memory.models import not_found_advice

_TASKS: dict[TaskType, str] = {"document": "RETRIEVAL_DOCUMENT", "query": "RETRIEVAL_QUERY"}


class GeminiEmbedder:
    default_min_similarity = 0.55
    default_switch_margin = 0.03
    default_title_drift_distance = 0.45

    def __init__(
        self, client: genai.Client, model: str = "gemini-embedding-001", dim: int = 768, batch_size: int = 100
    ):
        self._client = client
        self.model = model
        self.dim = dim
        self.batch_size = batch_size
        self.name = f"gemini-{model}-{dim}"

    async def embed(self, texts: list[str], task: TaskType) -> np.ndarray:
        out = []
        for start in range(0, len(texts), self.batch_size):
            out.append(await self._batch(texts[start : start + self.batch_size], task))
        return np.concatenate(out) if out else np.zeros((0, self.dim), dtype=np.float32)

    async def _batch(self, texts: list[str], task: TaskType) -> np.ndarray:
        try:
            response = await self._client.aio.models.embed_content(
                model=self.model,
                contents=texts,
                config=types.EmbedContentConfig(task_type=_TASKS[task], output_dimensionality=self.dim),
            )
        except errors.APIError as e:
            failure = f"Gemini embedding failed ({e.code}): {e.message}"
            raise ModelError(not_found_advice("embedding", failure, self.model) or failure) from e
        vectors = [e.values for e in (response.embeddings or []) if e.values]
        if len(vectors) != len(texts) or any(len(v) != self.dim for v in vectors):
            raise ModelError(
                f"Gemini returned {len(vectors)} embeddings of sizes {sorted({len(v) for v in vectors})} "
                f"for {len(texts)} texts of {self.dim} dims"
            )
        # Below 3072 dims the API does not normalise; cosine search needs unit vectors.
        return normalize_rows(np.asarray(vectors, dtype=np.float32))
