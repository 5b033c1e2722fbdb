"""The offline embedder's memory stays flat whatever it embeds: a big import embeds hundreds of
thousands of texts with tens of thousands of distinct words (numbers, names)."""

from __future__ import annotations

from pathlib import Path

import pytest

from parla.memory.embedders.offline import OfflineEmbedder

pytestmark = pytest.mark.tier("fast")


def _rss_mb() -> float:
    status = Path("/proc/self/status").read_text(encoding="ascii")
    return int(status.split("VmRSS:")[1].split()[0]) / 1024


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="the resident size is read from /proc")
def test_distinct_words_do_not_grow_the_process():
    embedder = OfflineEmbedder()
    embedder.embed_sync(["warm up: the weights and the tokenizer loaded"])
    before = _rss_mb()
    for batch in range(20):  # 80,000 words never seen before, as an import's numbers and names are
        embedder.embed_sync([" ".join(f"w{batch}x{i}q{j}" for j in range(8)) for i in range(500)])
    # the tokenizer's word cache took about 70 MB for these (tokenizers 0.23); none is kept now
    assert _rss_mb() - before < 30
