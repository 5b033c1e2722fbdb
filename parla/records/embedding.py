"""Embeddings always travel with the text they were made from, and say which embedder made them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

import numpy as np

from .calibration import Calibration

TaskType = Literal["document", "query"]


@dataclass(frozen=True)
class EmbeddedText:
    """A text and its unit-length embedding. No store API takes a vector without its text."""

    text: str
    vector: np.ndarray
    embedder: str

    def __post_init__(self) -> None:
        if self.vector.ndim != 1:
            raise ValueError("an embedding must be a 1-d vector")

    @property
    def dim(self) -> int:
        return int(self.vector.shape[0])


class Embedder(Protocol):
    """Turns texts into unit vectors. `name` identifies the model and dimension so a store can
    refuse to mix vectors from different embedders. The search thresholds are the embedder's own
    `calibration`, used unless settings override them (similarity scales differ between models)."""

    name: str
    dim: int
    calibration: Calibration

    async def embed(self, texts: list[str], task: TaskType) -> np.ndarray: ...


class WrappedEmbedder:
    """An embedder that stands for another one (same name, dimension and thresholds) and adds a
    condition to its calls; `embed` passes through until a subclass says otherwise."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.calibration = inner.calibration

    async def embed(self, texts: list[str], task: TaskType) -> np.ndarray:
        return await self.inner.embed(texts, task)


def normalize_rows(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero), as float32."""
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    return matrix / np.where(norms == 0, 1, norms)


async def embed_texts(embedder: Embedder, texts: list[str], task: TaskType = "document") -> list[EmbeddedText]:
    if not texts:
        return []
    vectors = await embedder.embed(texts, task)
    return [EmbeddedText(text, vector, embedder.name) for text, vector in zip(texts, vectors, strict=True)]


async def similarities(embedder: Embedder, query: str, texts: list[str]) -> np.ndarray:
    """Cosine similarity of a query to each text (for ranking a chat's own memory items)."""
    if not texts:
        return np.zeros(0, dtype=np.float32)
    query_vector = normalize_rows(await embedder.embed([query], "query"))[0]
    scores: np.ndarray = normalize_rows(await embedder.embed(texts, "document")) @ query_vector
    return scores
