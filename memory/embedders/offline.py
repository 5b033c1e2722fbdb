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
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer

from parla.memory.embedding import TaskType, normalize_rows
from parla.memory.errors import ModelError
from parla.memory.text import FRAMING, STOPWORDS, words

_CONFIG = "l2_supercat"
_DIM = 256
_IGNORED = STOPWORDS | FRAMING


@dataclass(frozen=True)
class _Model:
    tokenizer: Tokenizer
    weights: np.ndarray


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
    with safe_open(str(root / "weights" / f"{_CONFIG}_{_DIM}.safetensors"), framework="np") as f:
        weights = f.get_tensor("embedding.weight").astype(np.float32)
    return _Model(tokenizer, weights)


def _content(text: str) -> str:
    kept = [w for w in words(text) if w not in _IGNORED]
    return " ".join(kept) if kept else text


class OfflineEmbedder:
    """Fast (tens of thousands of short texts a second) but weaker on paraphrase than Gemini;
    its similarities sit lower, hence its own search thresholds (calibrated on tests/data)."""

    name = f"wordllama-{_CONFIG}-{_DIM}"
    dim = _DIM
    default_min_similarity = 0.12
    default_switch_margin = 0.03
    default_title_drift_distance = 0.8

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
                out[row] = model.weights[encoding.ids].mean(axis=0)
        return normalize_rows(out)
