"""What a spoken request for a chat is about: its topic, its words and the date it names.

"Take me back to the conversation on when Tom adopted the dog" asks for a chat about "Tom adopted
the dog". The words that lead into the topic frame the request and say nothing of it, so they
weigh nothing: the leading run of stop words, framing words ("chat", "talked") and words that lead
a request ("take", "find", "want", in the five languages) is left out, up to the first word that
is none of them. Only where they lead: "take" is a topic word in "when Tom took the bus", and the
framing words anywhere (`FRAMING`) are left out as before.

A date the request names ("in early January", "yesterday") is about when, not what: it is read as a
span (`dates.find_date`) and its words are left out of the topic, so a month's name cannot find a
fact that happens to name that month. A possessive is its name ("Ana's" is "ana"), so a
name said every day is not taken for a word said nowhere.

The words written with a capital inside the request are its names ("my trip to Iceland"): a name is
specific, so a chat that never says it is not about it, where a common word ("describes",
"activity") is often said otherwise. German writes every noun with a capital, so a German
request has no names by this rule.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from .dates import DateSpan, find_date
from .text import FRAMING, STOPWORDS, language_of, words

# fmt: off
_LEAD_ENGLISH = """
take bring get find show pull load change move jump head return go want wanna like lets let one ones
answers answer up again which mean meant thread topic subject whether what's where's how's who's
"""
_LEAD_OTHER = """
puoi potresti portami porta trova trovami cerca mostrami fammi vedere vorrei voglio continuare
riaprire andiamo vai quella quello dove cui argomento
puedes podrías podrias llévame llevame lleva busca encuentra muéstrame muestrame quiero continuar
seguir vamos ve donde tema
kannst könntest bring bringe mich finde such suche zeig zeige möchte will weiter fortsetzen geh gehe
gehen wo thema
peux pourrais emmène emmene ramène ramene trouve cherche montre veux voudrais continuer reprendre
reprends allons va retourne retournons celle celui sujet
"""
# fmt: on
# Words that lead into a request without saying what it is about ("can you find the one where").
LEAD = frozenset((_LEAD_ENGLISH + _LEAD_OTHER).split())
_FRAME = LEAD | FRAMING | STOPWORDS
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*['’]?")
_POSSESSIVE = re.compile(r"['’]s?$")
# Where a sentence starts, a capital says nothing of the word.
_SENTENCE_START = re.compile(r"(?:^|[.!?:;\"“«]\s*)$")


@dataclass(frozen=True)
class RequestTopic:
    """`text`: the request without its framing and its date (what to embed); `words`: its content
    words, distinct, in order; `names`: those of them it writes with a capital inside a sentence;
    `date`: the span the request names, or None."""

    text: str
    words: list[str]
    names: frozenset[str]
    date: DateSpan | None


def bare(word: str) -> str:
    """A word without a possessive ending ("caroline's", "kids'")."""
    return _POSSESSIVE.sub("", word) or word


def request_topic(request: str, now: datetime) -> RequestTopic:
    found = find_date(request, now)
    rest = request if found is None else f"{request[: found.start]} {request[found.end :]}"
    said = list(_WORD.finditer(rest))
    lead = next((i for i, m in enumerate(said) if m[0].lower() not in _FRAME), len(said))
    text = rest[said[lead].start() :].strip() if lead < len(said) else ""
    kept = (bare(w) for w in words(text))
    topic_words = list(dict.fromkeys(w for w in kept if len(w) > 2 and w not in STOPWORDS and w not in FRAMING))
    names = frozenset(
        bare(m[0].lower()) for m in said[lead:] if m[0][:1].isupper() and not _SENTENCE_START.search(rest[: m.start()])
    )
    if language_of(request) == "de":
        names = frozenset()
    names &= set(topic_words)
    return RequestTopic(text, topic_words, names, None if found is None else found.span)
