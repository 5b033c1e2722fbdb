"""Text in pieces of bounded length, cut after a paragraph or a sentence where one ends near the
limit, else after a word: an imported turn too long for one summarising step, and what the rules
read at once.

The rules that read sentences (the offline summariser's ranking, the durable statements, the
dates of a fact) take time with the length of what they read, and some of their patterns with its
square: one "sentence" of 12,000 characters without a full stop took them seconds, and a turn of
16 MB of such text minutes. No statement worth keeping is longer than `READ_AT_ONCE`, so they read
longer sentences in pieces of that size, which keeps their cost linear in the text."""

from __future__ import annotations

from parla.kernel.patterns import lazy_pattern

READ_AT_ONCE = 500
_SPLIT_AT = lazy_pattern(r"\n\s*\n|(?<=[.!?])\s+|\n")  # at first use: commands that only read the store import this


def cut_point(text: str, start: int, end: int) -> int:
    """Where to end a piece of `text` that starts at `start` and may not pass `end` (before the
    text's end): after the last paragraph or sentence end in its second half, else after its last
    space, else at `end`. Looks at that window only."""
    ends = [m.end() for m in _SPLIT_AT().finditer(text, start, end) if m.end() - start >= (end - start) // 2]
    space = text.rfind(" ", start, end)
    return ends[-1] if ends else (space + 1 if space >= 0 else end)


def split_text(text: str, max_chars: int) -> list[str]:
    """`text` in pieces of at most `max_chars`, each cut by `cut_point`, without the spaces around
    them. Each cut looks at one window of the text only: the work is linear in its length."""
    pieces, start = [], 0
    while len(text) - start > max_chars:
        cut = cut_point(text, start, start + max_chars)
        pieces.append(text[start:cut].strip())
        start = cut
    return [p for p in [*pieces, text[start:].strip()] if p]
