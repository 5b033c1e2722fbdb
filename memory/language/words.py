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
# "what's my daughter's name", "what is Tom's job": the word after a possessive in a question for
# what something is names what is asked ("When did Tom's dog run away" asks about the dog)
_ASKED = re.compile(
    r"\b(?:what|which)(?:['’]s|\s+(?:is|was|are|were))\s+(?:[^\W_]+\s+){0,3}?[^\W_]+['’]s\s+([^\W_]+)",
    re.IGNORECASE,
)
# The words that ask (five languages): they say what kind of answer is wanted, and an answer does
# not hold them, where a question echoing the request does. Not the ones that are other words in
# English too (German "was", Italian "come").
_ASKING_WORDS = """
what who whom whose when where which why how cosa che chi quando dove quale quali perché
qué que quién quien cuándo cuando dónde donde cuál cual cómo como wer wen wem wessen wann wo
welche welcher welches wie warum quoi qui quand où quel quelle quels quelles comment pourquoi
"""
_ASKING = frozenset(_ASKING_WORDS.split())

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


def answer_words(text: str) -> list[str]:
    """The words to find an answer by: `query_words` without the words that ask ("what", "wann")
    and, in English, the word a possessive asks for ("name" in "what's my daughter's name"). The answer says
    neither ("my daughter is called Nina"); an echo of the question says both ("What should I
    name it?"), and where few turns hold them bm25 would rank the echo first."""
    asked = {m[1].casefold() for m in _ASKED.finditer(text)}
    said = query_words(text)
    return [w for w in said if w not in asked and w not in _ASKING] or said
