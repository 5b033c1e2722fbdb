"""The one token estimator every part of Parla uses (the prompt budget and the compaction trigger must agree).

A character-based estimate (about four characters a token for English text under Gemini's
tokenizer) is cheap enough for the audio-adjacent paths and, used consistently, keeps the
compaction trigger, the prompt budget and the benchmarks comparable. It never undercounts an
empty string as negative and is subadditive up to rounding: tokens(a + b) <= tokens(a) + tokens(b).
"""

from __future__ import annotations

CHARS_PER_TOKEN = 4


def estimate_tokens(text: str) -> int:
    """Estimated token count of `text` (ceil of characters / 4)."""
    return -(-len(text) // CHARS_PER_TOKEN)


def truncate_to_tokens(text: str, max_tokens: int) -> str:
    """The longest prefix of `text` within `max_tokens`, cut at a word boundary where one is near."""
    limit = max(0, max_tokens) * CHARS_PER_TOKEN
    if len(text) <= limit:
        return text
    cut = text[:limit]
    space = cut.rfind(" ")
    if space >= limit * 3 // 4:
        cut = cut[:space]
    return cut.rstrip()
