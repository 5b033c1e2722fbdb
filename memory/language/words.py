"""Words of a recall request, as both stores' keyword indexes look them up.

Both indexes split text the same plain way (letters and digits of any script, lower-cased, no
stemming and no stop words), because a chat may be in any language or in several: a stemmer of
one language would mangle the others, and the rarity of a word (bm25's idf, over the user's own
turns) already makes "the" or "di" count for almost nothing. The request is split here, once,
so SQLite and Postgres receive the same words.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"[^\W_]+")  # letters and digits; "_" splits words as both indexes do

# A request longer than this many distinct words is a paragraph, not a question; the first
# ones carry what it asks about and keep the query cheap.
MAX_QUERY_WORDS = 24


def query_words(text: str) -> list[str]:
    """The distinct words of `text` (two characters or more, lower-case, in order)."""
    seen: dict[str, None] = {}
    for word in _WORD.findall(text.casefold()):
        if len(word) >= 2:
            seen.setdefault(word, None)
    return list(seen)[:MAX_QUERY_WORDS]
