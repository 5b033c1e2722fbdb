"""The offline embedder: WordLlama's static token embeddings (256 dims), numpy only.

The weights and the tokenizer ship inside the `wordllama` wheel. WordLlama's own loader looks for
the tokenizer in a folder name the wheel does not use and then tries to download it, so the files
are opened here directly; nothing is fetched at run time.

Pooling is a mean over the tokens of the text's content words: stop words and the words that
frame a request ("switch to the chat where we talked about ...") are left out, for documents and
queries alike, because with static embeddings they pull every text towards the same point.
"""

from __future__ import annotations

import asyncio
import functools
import importlib.util
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer

from parla.records.calibration import OFFLINE
from parla.records.embedding import TaskType, normalize_rows

from ..errors import ModelError
from ..language.text import FRAMING, STOPWORDS, words

_CONFIG = "l2_supercat"
_DIM = 256
_IGNORED = STOPWORDS | FRAMING


@dataclass(frozen=True)
class _Model:
    tokenizer: Tokenizer
    # as stored (float16); the rows a text uses are made float32 when gathered, so a search's few
    # words do not wait for all 32,000 rows to be converted (bench/cli_startup.py)
    weights: np.ndarray

    def mean_row(self, ids: list[int]) -> np.ndarray:
        """The mean of the token vectors `ids`, in float32."""
        mean: np.ndarray = self.weights[ids].astype(np.float32).mean(axis=0)
        return mean


@functools.lru_cache(maxsize=1)
def _load_model() -> _Model:
    from safetensors import safe_open

    # find_spec locates the package without running its __init__, which calls
    # logging.basicConfig(level=INFO) and would take over the application's logging.
    spec = importlib.util.find_spec("wordllama")
    if spec is None or spec.origin is None:
        raise ModelError("the offline embedder needs the wordllama package: pip install wordllama")
    root = Path(spec.origin).parent
    tokenizer = Tokenizer.from_file(str(root / "tokenizers" / f"{_CONFIG}_tokenizer_config.json"))
    # No word cache: it kept every distinct word (an import's numbers and names) up to tens of
    # thousands, over 100 MB for a big import, and tokenizing short texts was no faster with it
    # (bench.scale). `_resize_cache(0)` is how tokenizers turns it off:
    # https://github.com/huggingface/tokenizers/pull/1675, /issues/1680
    tokenizer.model._resize_cache(0)
    with safe_open(str(root / "weights" / f"{_CONFIG}_{_DIM}.safetensors"), framework="np") as f:
        weights = f.get_tensor("embedding.weight")
    return _Model(tokenizer, weights)


def _content(text: str) -> str:
    kept = [w for w in words(text) if w not in _IGNORED]
    return " ".join(kept) if kept else text


class OfflineEmbedder:
    """Fast (tens of thousands of short texts a second) but weaker on paraphrase than Gemini;
    its similarities sit lower, hence its own search thresholds (calibrated on tests/data)."""

    name = f"wordllama-{_CONFIG}-{_DIM}"
    dim = _DIM
    calibration = OFFLINE

    async def embed(self, texts: list[str], task: TaskType) -> np.ndarray:
        # Static embeddings make no difference between documents and queries.
        return await asyncio.to_thread(self.embed_sync, texts)

    def embed_sync(self, texts: list[str]) -> np.ndarray:
        model = _load_model()
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, encoding in enumerate(
            model.tokenizer.encode_batch([_content(t) for t in texts], add_special_tokens=False)
        ):
            if encoding.ids:
                out[row] = model.mean_row(encoding.ids)
        return normalize_rows(out)


class WordTable:
    """Unit vectors of single words (WordLlama's static token vectors, averaged over a word's
    tokens), each word embedded once and kept as a row of one matrix: the same word always gets
    the same vector, whatever text it is in, which is what comparing a request's words with a
    stored text's words one by one needs. Not thread-safe: one owner (the search) uses it."""

    def __init__(self, capacity: int = 32768) -> None:
        self.capacity = capacity  # words kept; a full table starts again (1 KB a word)
        self._rows: dict[str, int] = {}
        self._matrix = np.zeros((1024, _DIM), dtype=np.float32)

    def ids(self, words: Sequence[str]) -> np.ndarray:
        """The rows of `words`, embedding the ones not seen before in one batch."""
        new = [w for w in dict.fromkeys(words) if w not in self._rows]
        if new and len(self._rows) + len(new) > self.capacity:
            self._rows.clear()
            new = list(dict.fromkeys(words))
        if new:
            self._add(new)
        return np.fromiter((self._rows[w] for w in words), dtype=np.int64, count=len(words))

    def vectors(self, ids: np.ndarray) -> np.ndarray:
        rows: np.ndarray = self._matrix[ids]
        return rows

    def _add(self, words: list[str]) -> None:
        model = _load_model()
        first = len(self._rows)
        if first + len(words) > self._matrix.shape[0]:
            grown = np.zeros((max(2 * self._matrix.shape[0], first + len(words)), _DIM), dtype=np.float32)
            grown[:first] = self._matrix[:first]
            self._matrix = grown
        for offset, encoding in enumerate(model.tokenizer.encode_batch(words, add_special_tokens=False)):
            if encoding.ids:
                self._matrix[first + offset] = model.mean_row(encoding.ids)
        self._matrix[first : first + len(words)] = normalize_rows(self._matrix[first : first + len(words)])
        self._rows.update({w: first + offset for offset, w in enumerate(words)})
