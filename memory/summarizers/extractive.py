"""The offline summarizer: extractive, no model. It keeps the most salient sentences (frequent
content words of the passage), and favours sentences that carry dates, numbers, names and the
user's preferences or decisions, since those are what a summary must not lose (seed 000)."""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass

from memory.text import STOPWORDS, WORD, content_words, words
from memory.tokens import estimate_tokens, truncate_to_tokens
from memory.turn import Turn

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
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
]
_DATE = re.compile(
    r"\b(?:" + "|".join(_MONTHS) + r")\b|\b\d{4}\b|\b\d{1,2}[/.-]\d{1,2}(?:[/.-]\d{2,4})?\b|\b\d{1,2}(?:st|nd|rd|th)\b",
    re.IGNORECASE,
)
_NUMBER = re.compile(r"\d")
_INTENT = re.compile(
    r"\b(?:i|we)\s+(?:really\s+)?(?:like|love|prefer|hate|want|need|will|plan|decided|chose|booked|bought|"
    r"am allergic|can't|cannot|don't like|must)\b|\bmy\s+\w+|\ballergic\b|\bremember\b|\bdeadline\b|\bbudget\b",
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


def _split(turns: list[Turn], start_order: int = 0) -> list[_Sentence]:
    out = []
    for turn in turns:
        speaker = "User" if turn.role == "user" else "Assistant"
        for piece in _SENTENCE.split(turn.text):
            piece = piece.strip()
            if len(words(piece)) >= 4:
                out.append(_Sentence(piece, speaker, start_order + len(out)))
    return out


def _split_lines(text: str) -> list[_Sentence]:
    out = []
    for piece in _SENTENCE.split(text):
        piece = piece.strip()
        if len(words(piece)) >= 3:
            out.append(_Sentence(piece, "", len(out)))
    return out


def _detail_bonus(text: str) -> float:
    bonus = 0.0
    if _DATE.search(text):
        bonus += 1.0
    elif _NUMBER.search(text):
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


def _select(sentences: list[_Sentence], cap_tokens: int) -> str:
    chosen: list[_Sentence] = []
    used = 0
    for _, s in _rank(sentences):
        cost = estimate_tokens(s.line) + 1
        if used + cost > cap_tokens:
            continue
        chosen.append(s)
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

    async def chunk_summary(self, turns: list[Turn], cap_tokens: int) -> str:
        return _select(_split(turns), cap_tokens)

    async def facts(self, turns: list[Turn]) -> list[str]:
        detailed = [(score, s) for score, s in _rank(_split(turns)) if _detail_bonus(s.text) >= 0.8]
        chosen = sorted((s for _, s in detailed[: self.max_fact_lines]), key=lambda s: s.order)
        return [s.line for s in chosen]

    async def meta_summary(self, summaries: list[str], cap_tokens: int) -> str:
        return _select(_split_lines("\n".join(summaries)), cap_tokens)

    async def title(self, description: str) -> str:
        """The passage's most salient content terms, in order of first use."""
        terms = [w for w in content_words(description) if w not in ("user", "assistant")]
        if not terms:
            return "New chat"
        freq = Counter(terms)
        capitals = {
            w.lower()
            for sentence in _SENTENCE.split(description)
            for w in WORD.findall(sentence.partition(": ")[2] or sentence)[1:]
            if w[0].isupper()
        }
        score = {w: freq[w] + (1.5 if w in capitals else 0) for w in freq}
        best = sorted(score, key=lambda w: (-score[w], terms.index(w)))[:4]
        ordered = sorted(best, key=terms.index)
        display = {w.lower(): w for w in WORD.findall(description)}
        title = ", ".join(display.get(w, w) for w in ordered)
        return title[:1].upper() + title[1:]
