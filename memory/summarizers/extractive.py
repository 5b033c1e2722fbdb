"""The offline summarizer: extractive, no model. It keeps the most salient sentences (frequent
content words of the passage), and favours sentences that carry dates, numbers, names and the
user's preferences or decisions, since those are what a summary must not lose. Sentences
that say the same thing again are left out, and titles are phrases taken from the passage."""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from dataclasses import dataclass

from parla.kernel.tokens import estimate_tokens, truncate_to_tokens
from parla.records.summary import ChunkSummary
from parla.records.turn import Turn

from ..language.auto_pins import PinCandidate, offline_candidates
from ..language.importance import turn_importance
from ..language.pieces import READ_AT_ONCE, split_text
from ..language.text import STOPWORDS, WORD, content_words, language_of, words

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
# Italian, Spanish, German, French
_OTHER_LANGUAGES_DATES = """gennaio febbraio marzo aprile maggio giugno luglio agosto settembre ottobre novembre dicembre lunedì martedì
    mercoledì giovedì venerdì sabato domenica oggi domani ieri stasera enero febrero abril mayo junio julio
    septiembre octubre noviembre diciembre lunes martes miércoles jueves viernes sábado domingo hoy mañana ayer
    januar februar märz juni juli oktober dezember montag dienstag mittwoch donnerstag freitag samstag sonntag
    heute morgen gestern janvier février mars avril juin juillet août septembre octobre décembre lundi mardi
    mercredi jeudi vendredi samedi dimanche demain hier"""
_MONTHS = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
    "jan",
    "feb",
    "mar",
    "apr",
    "jun",
    "jul",
    "aug",
    "sep",
    "sept",
    "oct",
    "nov",
    "dec",
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "today",
    "tomorrow",
    "yesterday",
    "tonight",
    "weekend",
    *_OTHER_LANGUAGES_DATES.split(),
]
# Date words are looked up in a set: one regex alternating 150 words took 80 µs per sentence, the
# most of an offline import's time.
_DATE_WORDS = frozenset(_MONTHS)
_LETTERS = re.compile(r"[^\W\d_]+")
_DATE_NUMBERS = re.compile(
    r"\b\d{4}\b|\b\d{1,2}[/.-]\d{1,2}(?:[/.-]\d{2,4})?\b|\b\d{1,2}(?:st|nd|rd|th)\b", re.IGNORECASE
)
_NUMBER = re.compile(r"\d")
_INTENT = re.compile(
    r"\b(?:i|we)\s+(?:really\s+)?(?:like|love|prefer|hate|want|need|will|plan|decided|chose|booked|bought|"
    r"am allergic|can't|cannot|don't like|must)\b|\bmy\s+\w+|\ballergic\b|\bremember\b|\bdeadline\b|\bbudget\b"
    # the same in Italian, Spanish, German and French
    r"|\b(?:mi piace|preferisco|odio|ho deciso|abbiamo deciso|ricordati|scadenza|il mio|la mia|me gusta|prefiero|"
    r"decidí|hemos decidido|recuerda|plazo|ich mag|ich bevorzuge|ich habe entschieden|wir haben entschieden|"
    r"frist|mein\w*|j'aime|je préfère|j'ai décidé|nous avons décidé|échéance|allergi\w*|alérgic\w*)\b",
    re.IGNORECASE,
)


@dataclass
class _Sentence:
    text: str
    speaker: str
    order: int
    weight: float = 1.0

    @property
    def line(self) -> str:
        return f"{self.speaker}: {self.text}" if self.speaker else self.text


def _sentences(text: str) -> list[str]:
    """The sentences of `text`, one longer than `READ_AT_ONCE` in pieces of that size: the rules
    that rank them and read their dates take time with their length, some with its square."""
    return [piece for sentence in _SENTENCE.split(text) for piece in split_text(sentence, READ_AT_ONCE)]


def _split(turns: list[Turn], start_order: int = 0) -> list[_Sentence]:
    out: list[_Sentence] = []
    for turn in turns:
        speaker = "User" if turn.role == "user" else "Assistant"
        for piece in _sentences(turn.text):
            if len(words(piece)) >= 4:
                out.append(_Sentence(piece, speaker, start_order + len(out)))
    return out


def _split_lines(text: str) -> list[_Sentence]:
    out: list[_Sentence] = []
    for piece in _sentences(text):
        if len(words(piece)) >= 3:
            out.append(_Sentence(piece, "", len(out)))
    return out


# Rolling, chunk and meta summaries rank the same sentences again and again (an import runs
# them for thousands of chats): the regexes run once per sentence.
@functools.lru_cache(maxsize=16384)
def _detail_bonus(text: str) -> float:
    bonus = 0.0
    has_number = _NUMBER.search(text) is not None
    if (has_number and _DATE_NUMBERS.search(text)) or not _DATE_WORDS.isdisjoint(_LETTERS.findall(text.lower())):
        bonus += 1.0
    elif has_number:
        bonus += 0.5
    names = {w for i, w in enumerate(WORD.findall(text)) if i > 0 and w[0].isupper() and w.lower() not in STOPWORDS}
    bonus += min(1.0, 0.35 * len(names))
    if _INTENT.search(text):
        bonus += 0.8
    return bonus


def _rank(sentences: list[_Sentence]) -> list[tuple[float, _Sentence]]:
    freq = Counter(w for s in sentences for w in set(content_words(s.text)))
    top = max(freq.values(), default=1)
    ranked = []
    for s in sentences:
        terms = set(content_words(s.text))
        salience = sum(freq[w] for w in terms) / top / math.sqrt(1 + len(terms))
        bonus = _detail_bonus(s.text) + (0.2 if s.speaker == "User" else 0.0)
        ranked.append(((salience + bonus) * s.weight, s))
    ranked.sort(key=lambda r: (-r[0], r[1].order))
    return ranked


# Sentences sharing this much of their content words say the same thing ("Compare at least 2
# options" and "Compare at least 5 options"): a summary keeps only the first.
_SAME_SENTENCE = 0.8


def _same(a: set[str], b: set[str]) -> bool:
    return bool(a | b) and len(a & b) / len(a | b) >= _SAME_SENTENCE


def _select(sentences: list[_Sentence], cap_tokens: int) -> str:
    chosen: list[_Sentence] = []
    kept: list[set[str]] = []
    used = 0
    for _, s in _rank(sentences):
        cost = estimate_tokens(s.line) + 1
        terms = set(content_words(s.text)) or {s.text.lower()}
        if used + cost > cap_tokens or any(_same(terms, other) for other in kept):
            continue
        chosen.append(s)
        kept.append(terms)
        used += cost
    if not chosen and sentences:
        return truncate_to_tokens(sentences[0].line, cap_tokens)
    return "\n".join(s.line for s in sorted(chosen, key=lambda s: s.order))


class ExtractiveSummarizer:
    name = "extractive"

    # Older summary lines count a little less each time, so new turns can displace them.
    existing_decay = 0.85
    max_fact_lines = 8

    async def rolling_summary(self, existing: str, turns: list[Turn], cap_tokens: int) -> str:
        old = _split_lines(existing)
        for s in old:
            s.weight = self.existing_decay
            speaker, sep, rest = s.text.partition(": ")
            if sep and speaker in ("User", "Assistant"):
                s.speaker, s.text = speaker, rest
        return _select(old + _split(turns, start_order=len(old)), cap_tokens)

    async def chunk_summary(self, turns: list[Turn], cap_tokens: int) -> ChunkSummary:
        # a range matters as much as the most important thing said in it
        importance = max((t.importance if t.importance is not None else turn_importance(t) for t in turns), default=0)
        return ChunkSummary(_select(_split(turns), cap_tokens), importance)

    async def pins(self, turns: list[Turn]) -> list[PinCandidate]:
        return offline_candidates(turns)

    async def about_user(self, candidates: list[PinCandidate]) -> list[PinCandidate]:
        # its candidates are the user's own clauses, read as statements about them already
        return candidates

    async def facts(self, turns: list[Turn]) -> list[str]:
        detailed = [(score, s) for score, s in _rank(_split(turns)) if _detail_bonus(s.text) >= 0.8]
        chosen = sorted((s for _, s in detailed[: self.max_fact_lines]), key=lambda s: s.order)
        return [s.line for s in chosen]

    async def meta_summary(self, summaries: list[str], cap_tokens: int) -> str:
        return _select(_split_lines("\n".join(summaries)), cap_tokens)

    async def title(self, description: str) -> str:
        return offline_title(description)


# Small words a title may keep inside a phrase ("trip to Japan", "a bug in my Python service",
# "viaggio in Giappone", "Wohnung in Berlin", "marathon à Paris").
# fmt: off
_LINKS = frozenset([
    "of", "to", "for", "in", "on", "with", "at", "from", "my", "our", "the", "a", "an",
    "di", "del", "della", "dei", "delle", "degli", "per", "con", "al", "alla", "da", "su", "nel", "nella", "mio", "mia",
    "de", "en", "para", "el", "la", "mi",
    "im", "mit", "für", "von", "vom", "zu", "zum", "zur", "nach", "mein", "meine",
    "du", "des", "à", "au", "aux", "pour", "avec", "mon", "ma",
])
# fmt: on
# "and" joining two phrases of a title, in the passage's language.
_AND = {"en": "and", "it": "e", "es": "y", "de": "und", "fr": "et"}
# Verbs that open advice ("Keep the lid on", "Use whole wheat flour") rather than name a topic: a
# phrase starting with one starts after it. Gerunds stay ("Fixing a bug in my Python service").
# fmt: off
_VERBS = frozenset([
    "add", "ask", "avoid", "bake", "book", "bring", "buy", "call", "check", "choose", "compare", "consider", "cook",
    "cover", "cut", "decide", "do", "drink", "eat", "expect", "feed", "find", "fit", "focus", "give", "keep",
    "least", "leave", "let", "look", "move", "order", "pay", "pick", "plan", "play", "practice", "practise", "put",
    "read", "rest", "run", "save", "send", "set", "show", "sort", "start", "stay", "stop", "take", "tell", "try",
    "turn", "use", "visit", "wait", "walk", "want", "water", "write",
])
# fmt: on
_VERBISH = re.compile(r"(?:ly|ed)$")
_CLAUSE = re.compile(r"[,;:()?!.\"“”]+|\s[-–—]\s|\n")
_MAX_TITLE_WORDS = 7
# Words with digits count when they also have letters ("10k race", "French B2 exam"); amounts do not.
_TITLE_WORD = re.compile(r"[^\W_](?:[^\W_]|['’-])*")


def _phrases(description: str) -> list[tuple[int, list[str]]]:
    """Runs of content words joined by small links, in the passage's own words, with their
    position; numbers and words like "should" or "what" end a run."""
    out: list[tuple[int, list[str]]] = []
    for sentence in _SENTENCE.split(description):
        speaker, sep, rest = sentence.partition(": ")
        text = rest if sep and speaker in ("User", "Assistant") else sentence
        for clause in _CLAUSE.split(text):
            run: list[str] = []
            for token in [*_TITLE_WORD.findall(clause), ""]:
                lower = token.lower()
                lettered = any(c.isalpha() for c in token) and (len(lower) > 2 or any(c.isdigit() for c in token))
                content = lettered and lower not in STOPWORDS
                if content or (run and lower in _LINKS):
                    run.append(token)
                    continue
                while run and run[-1].lower() in STOPWORDS:
                    run.pop()
                if run:
                    out.append((len(out), run))
                run = []
    return out


def _content_of(phrase: list[str]) -> set[str]:
    return {w.lower() for w in phrase if w.lower() not in _LINKS}


def offline_title(description: str) -> str:
    """A title made of the passage's own phrases, e.g. "Getting married in Florence in September":
    the phrase whose words recur most (earlier ones count a little more), and a second one joined
    with "and" when the first is short and another recurs almost as much."""
    terms = Counter(w for w in content_words(description) if w not in ("user", "assistant"))
    phrases = []
    for position, phrase in _phrases(description):
        while phrase and (phrase[0].lower() in _VERBS or phrase[0].lower() in _LINKS):
            phrase = phrase[1:]
        phrase = phrase[:_MAX_TITLE_WORDS]
        while phrase and (phrase[-1].lower() in STOPWORDS or phrase[-1].lower().endswith("ly")):
            phrase = phrase[:-1]
        if phrase and not _VERBISH.search(phrase[0].lower()):
            phrases.append((position, phrase))
    if not phrases:
        return "New chat"

    def score(item: tuple[int, list[str]]) -> float:
        position, phrase = item
        words_in = _content_of(phrase)
        # Recurring words make the topic (a word said once adds little); early phrases set the subject.
        return sum(terms[w] - 0.7 for w in words_in) / (1 + 4 * position / len(phrases))

    ranked = sorted(phrases, key=lambda item: (-score(item), item[0]))
    title = list(ranked[0][1])
    if len(_content_of(title)) < 3:
        for item in ranked[1:]:
            second = item[1]
            if score(item) < score(ranked[0]) / 2 or max(terms[w] for w in _content_of(second)) < 2:
                break  # nothing else recurs enough to belong in the title
            if _content_of(second) & _content_of(title) or len(title) + 1 + len(second) > _MAX_TITLE_WORDS:
                continue
            title += [_AND[language_of(description)], *second]
            break
    words_out = [title[0][:1].upper() + title[0][1:], *title[1:]]
    return " ".join(words_out)
