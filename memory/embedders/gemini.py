"""Gemini embeddings through google-genai: `gemini-embedding-001` at 768 dims, documents embedded
as RETRIEVAL_DOCUMENT and spoken requests as RETRIEVAL_QUERY, in batches.

One retry policy for every Gemini REST call (embeddings and summaries): the client's
HttpRetryOptions (configured by the daemon) retries 408/429/5xx and connection errors, once,
there. What still fails is a ModelError; when Gemini cannot be used at all (unreachable, or the
key refused) it is ModelUnavailable and `GeminiAvailability` makes the calls of the next
`cooldown_s` fail at once instead of waiting through the retries again, so callers can fall back
to the offline models quickly."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Awaitable, Callable
from contextlib import suppress
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np
from google import genai
from google.genai import errors, types

from parla.kernel.models import ModelRole, not_found_advice
from parla.kernel.transport import transport_errors
from parla.records.calibration import GEMINI
from parla.records.embedding import TaskType, normalize_rows

from ..errors import ModelError, ModelUnavailable, RateLimited

log = logging.getLogger(__name__)
T = TypeVar("T")

# Answers after which retrying now cannot help: a refused key (400 API_KEY_INVALID, 401, 403) and
# statuses the client already retried (408, 429, 5xx).
_REFUSED = (401, 403)
_UNREACHABLE = (408, 429, 500, 502, 503, 504)


# How a call fails: the API's answer, or no answer (it cannot be reached).
_FAILURES: tuple[type[Exception], ...] = (errors.APIError, *transport_errors())


def retry_after(e: errors.APIError) -> float | None:
    """When a 429 says to try again, in seconds: its Retry-After header, else the `retryDelay` of
    the RetryInfo in its error details ("46s"), as the API gives it on a used-up quota
    (https://ai.google.dev/gemini-api/docs/rate-limits); None when it says nothing."""
    header = (getattr(e.response, "headers", None) or {}).get("retry-after")
    if header is not None:
        with suppress(TypeError, ValueError):  # an HTTP date: the details below say it in seconds too
            return max(0.0, float(header))
    details = e.details.get("error", {}).get("details", []) if isinstance(e.details, dict) else []
    for detail in details if isinstance(details, list) else []:
        delay = detail.get("retryDelay") if isinstance(detail, dict) else None
        if isinstance(delay, str) and (seconds := re.fullmatch(r"(\d+(?:\.\d+)?)s", delay)):
            return float(seconds.group(1))
    return None


def model_failure(e: Exception, what: str, role: ModelRole, model: str) -> ModelError:
    """`e`, an APIError or a transport failure of a Gemini call, as the ModelError callers handle;
    a model the API does not know comes with the setting to change and its replacement."""
    if isinstance(e, errors.APIError):
        detail = f"Gemini {what} failed ({e.code}): {e.message}"
        if e.code == 429:
            return RateLimited(detail, retry_after(e))
        if e.code in _REFUSED or (e.code == 400 and "API key" in (e.message or "")):
            return ModelUnavailable(f"{detail}; check GEMINI_API_KEY")
        if e.code in _UNREACHABLE:
            return ModelUnavailable(detail)
        return ModelError(not_found_advice(role, detail, model) or detail)
    return ModelUnavailable(f"Gemini {what} failed: could not reach the API ({type(e).__name__}: {e})")


@dataclass
class GeminiAvailability:
    """Shared by the Gemini embedder and summarizer of one client: after a ModelUnavailable,
    calls fail at once for `cooldown_s`, then Gemini is tried again."""

    cooldown_s: float = 60.0
    clock: Callable[[], float] = time.monotonic
    _until: float = field(default=0.0, init=False)
    _reason: str = field(default="", init=False)

    async def call(self, what: str, role: ModelRole, model: str, request: Callable[[], Awaitable[T]]) -> T:
        if self.clock() < self._until:
            raise ModelUnavailable(f"{self._reason} (not retried for {self._until - self.clock():.0f} s)")
        try:
            return await request()
        except _FAILURES as e:
            failure = model_failure(e, what, role, model)
            if isinstance(failure, ModelUnavailable):
                # a rate limit that says when to come back is waited for that long, no longer
                pause = self.cooldown_s
                if isinstance(failure, RateLimited) and failure.retry_after_s is not None:
                    pause = failure.retry_after_s
                if self.clock() >= self._until:
                    log.warning("%s; using offline models for %.0f s", failure, pause)
                self._until, self._reason = self.clock() + pause, str(failure)
            raise failure from e


_TASKS: dict[TaskType, str] = {"document": "RETRIEVAL_DOCUMENT", "query": "RETRIEVAL_QUERY"}


class GeminiEmbedder:
    calibration = GEMINI

    def __init__(
        self,
        client: genai.Client,
        model: str = "gemini-embedding-001",
        dim: int = 768,
        batch_size: int = 100,
        availability: GeminiAvailability | None = None,
    ):
        self._client = client
        self.availability = availability or GeminiAvailability()
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
        response = await self.availability.call(
            "embedding",
            "embedding",
            self.model,
            lambda: self._client.aio.models.embed_content(
                model=self.model,
                contents=texts,
                config=types.EmbedContentConfig(task_type=_TASKS[task], output_dimensionality=self.dim),
            ),
        )
        vectors = [e.values for e in (response.embeddings or []) if e.values]
        if len(vectors) != len(texts) or any(len(v) != self.dim for v in vectors):
            raise ModelError(
                f"Gemini returned {len(vectors)} embeddings of sizes {sorted({len(v) for v in vectors})} "
                f"for {len(texts)} texts of {self.dim} dims"
            )
        # Below 3072 dims the API does not normalise; cosine search needs unit vectors.
        return normalize_rows(np.asarray(vectors, dtype=np.float32))
