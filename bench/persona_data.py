"""Synthetic-Persona-Chat for the persona benchmark (`bench.persona`): its conversations, the
matching rule, and the folds.

The data (google-research-datasets/Synthetic-Persona-Chat, CC BY 4.0, by Jandaghi, Sheng, Bai,
Pujara and Sidahmed) is never in the repository: each command takes the path of its validation
split's CSV (columns "user 1 personas", "user 2 personas", "Best Generated Conversation"). Only the
validation split is read; the test split is held out.

The matching rule decides both "expressed in the conversation" and "reaches the profile", the same
before and after any change: a persona sentence matches a text when the text holds at least half of
the sentence's content words, each weighed by how rare it is in the conversations (its inverse
document frequency over every turn: "colorado" weighs more than "live"). Content words are the
words less the stop words, each cut to a crude stem ("knitting" and "knit", "cookies" and "cookie",
"worker" and "work" are one); numbers count. A question the user asks expresses nothing: the text
a persona sentence is matched against is a turn's sentences that do not end in a question mark.
"""

from __future__ import annotations

import csv
import functools
import math
import random
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from parla.memory.language.text import STOPWORDS, words

_LINE = re.compile(r"^User ([12]):\s*(.*)$")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
# Verbs and fillers too common in this data to show which fact a sentence states.
_WEAK = frozenset({"love", "enjoy", "really", "lot", "time", "am", "favorite", "favourite", "also", "ive"})


@dataclass(frozen=True)
class Conversation:
    """One conversation as a user would import it: the user's persona, the other speaker's, and
    the turns in order, each with who said it ("user" for User 1, "other" for User 2)."""

    index: int
    user_persona: tuple[str, ...]
    other_persona: tuple[str, ...]
    turns: tuple[tuple[str, str], ...]

    def said_by(self, who: str) -> list[str]:
        return [text for speaker, text in self.turns if speaker == who]

    def swapped(self) -> Conversation:
        """The same conversation seen from User 2's side."""
        return Conversation(
            self.index,
            self.other_persona,
            self.user_persona,
            tuple(("other" if s == "user" else "user", t) for s, t in self.turns),
        )


def read_conversations(path: Path) -> list[Conversation]:
    """Every conversation of the CSV, in its order. A line that does not start with a speaker
    continues the turn before it (a recipe's ingredients, a list)."""
    out = []
    with path.open(encoding="utf-8", newline="") as f:
        for index, row in enumerate(csv.DictReader(f)):
            turns: list[list[str]] = []
            for line in row["Best Generated Conversation"].splitlines():
                match = _LINE.match(line.strip())
                if match:
                    turns.append(["user" if match.group(1) == "1" else "other", match.group(2).strip()])
                elif turns and line.strip():
                    turns[-1][1] += "\n" + line.strip()
            out.append(
                Conversation(
                    index,
                    _sentences(row["user 1 personas"]),
                    _sentences(row["user 2 personas"]),
                    tuple((s, t) for s, t in turns if t),
                )
            )
    return out


def _sentences(persona: str) -> tuple[str, ...]:
    return tuple(s.strip() for s in persona.splitlines() if s.strip())


@functools.lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A crude stem: the usual English endings cut, a final e and a doubled consonant dropped."""
    w = word.replace("'", "")
    for suffix in ("ing", "ed", "er", "es", "s", "ly"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            w = w[: -len(suffix)]
            break
    if w.endswith("e") and len(w) > 3:
        w = w[:-1]
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "aeiou":
        w = w[:-1]
    return w


def stems(text: str) -> frozenset[str]:
    """The stems of a text's content words, and its numbers."""
    return frozenset(
        stem(w) for w in words(text) if w.isdigit() or (w not in STOPWORDS and len(w) > 2 and w not in _WEAK)
    )


def statements(text: str) -> str:
    """The sentences of `text` that are not questions."""
    return " ".join(s for s in _SENTENCE.split(text) if not s.rstrip().endswith("?"))


class Matcher:
    """The matching rule (the module's docstring), its weights from the turns of `conversations`."""

    def __init__(self, conversations: Iterable[Conversation]) -> None:
        counts: Counter[str] = Counter()
        documents = 0
        for c in conversations:
            for _, text in c.turns:
                counts.update(stems(text))
                documents += 1
        self._idf = {s: math.log(documents / n) for s, n in counts.items()}
        self._unseen = math.log(documents)

    def weight(self, stem_: str) -> float:
        return self._idf.get(stem_, self._unseen)

    def matches(self, persona: str, text: str) -> bool:
        """Whether `text` says the persona sentence."""
        want = stems(persona)
        if not want:
            return False
        shared = want & stems(statements(text))
        return bool(shared) and 2 * sum(map(self.weight, shared)) >= sum(map(self.weight, want))

    def expressed(self, conversation: Conversation) -> list[str]:
        """The user's persona sentences that some turn of the user says."""
        said = conversation.said_by("user")
        return [p for p in conversation.user_persona if any(self.matches(p, t) for t in said)]


def folds(conversations: Iterable[Conversation], k: int, seed: int = 41) -> dict[int, int]:
    """Each conversation's fold (0..k-1), drawn at random. Folds that keep the same speakers apart
    are not to be had on this split: the speakers' personas recur across conversations and chain
    nearly all of them (993 of 1,000) into one group."""
    indices = [c.index for c in conversations]
    random.Random(seed).shuffle(indices)
    return {index: n % k for n, index in enumerate(indices)}
