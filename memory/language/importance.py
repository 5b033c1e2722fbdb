"""Importance by rules: how much a turn matters later (0-10), and the user's durable statements
about themselves that deserve a pin without being asked.

The rules read English first-person statements: "I'm allergic to ...", "my daughter is called ...",
"my flight is on June 3", "I've decided to ...", "I prefer ...", "the gate code is 4417". They do
not catch a fact said in another language, in the third person, spread over two turns, or worded
in a way none of the patterns expects (`memory.language.durable` reads the general shape of such statements
for those); a question, a wish or a hypothetical ("if I were allergic") is not pinned. The Gemini summarizer judges with the model instead; these rules are the offline path.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from parla.kernel.patterns import lazy_pattern
from parla.records.turn import Turn

from .durable import is_durable, stands_alone
from .pieces import READ_AT_ONCE, split_text
from .text import clauses, sentences, words

# The importance from which a turn counts as important (stats; the context's default threshold).
IMPORTANT = 7.0
# A durable statement no worded rule names, found by `memory.language.durable`'s general reading.
_PERSONAL = 7.0

Category = Literal["health", "family", "identity", "date", "decision", "preference", "code", "place", "personal"]

_DATE_WORD = (
    r"(?:january|february|march|april|may|june|july|august|september|october|november|december|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|tomorrow|next week|next month)"
)
_RELATIVE = (
    r"(?:wife|husband|partner|girlfriend|boyfriend|son|daughter|mother|mom|mum|father|dad|sister|brother|"
    r"kids?|children|grandmother|grandma|grandfather|grandpa|baby|fiancée?|cat|dog)"
)
_ME = r"(?:i'm|i am|i've|i have|i)"

# (category, importance, pattern): the first pattern that matches a sentence decides.
_RULES: list[tuple[Category, float, Callable[[], re.Pattern[str]]]] = [
    (
        "health",
        9.5,
        lazy_pattern(
            r"\b(?:i'm|i am|i've been|i have been)\s+(?:severely\s+|very\s+|badly\s+)?(?:allergic|intolerant)\b"
            # not to what only the conversation names ("I'm allergic to them")
            r"(?!\s+to\s+(?:it|them|that|this|those|these)\b)"
            r"|\bmy\s+(?:\w+\s+)?allergy\b|\bi (?:have|suffer from|was diagnosed with|got diagnosed with)\s+"
            r"(?:type [12] )?(?:diabetes|asthma|epilepsy|celiac|coeliac|high blood pressure|a heart condition|"
            r"migraines|arthritis|an? \w+ allergy|cancer|adhd|anxiety|depression)\b"
            r"|\bi (?:take|am on|'m on)\s+\w+\s*(?:\d+\s*mg|every day|daily|twice a day|for my)"
            r"|\bmy blood type\b|\bi(?:'m| am) (?:pregnant|diabetic|asthmatic|epileptic)\b",
            re.IGNORECASE,
        ),
    ),
    (
        "code",
        8.5,
        lazy_pattern(
            r"\b(?:door|gate|lock|alarm|garage|locker|safe|wifi|wi-fi|building|entry)\s+(?:code|password|pin)\s+"
            r"(?:is|=|:)\s*\S+",
            re.IGNORECASE,
        ),
    ),
    (
        "identity",
        8.5,
        lazy_pattern(
            r"\bmy name is\s+[a-z]|\bcall me\s+(?-i:[A-Z])|\bi(?:'m| am)\s+\d{1,3}\s+(?:years old|now)\b|\bi was born\b"
            # "Hi, I'm Larry"
            r"|^\W*(?:(?:hi|hello|hey)\W+)?i(?:'m| am)\s+(?-i:[A-Z][a-z]+)\W*$",
            re.IGNORECASE,
        ),
    ),
    (
        "family",
        8.0,
        # case matters only for a name ("my sister Ana is ..."): the rest of the pattern ignores it
        lazy_pattern(
            rf"\b(?i:my)\s+(?:\w+\s+)?(?i:{_RELATIVE})(?i:'s name)?\s+(?i:is|are|was)\s+(?:(?i:called|named)|\d|[A-Z])"
            rf"|\b(?i:my)\s+(?i:{_RELATIVE})\s+[A-Z][a-z]+\s+(?i:is|turns|has|was)\b"
            r"|(?i:\bi have (?:a|an|two|three|four|\d)\s+(?:\w+\s+)?(?:sons?|daughters?|kids|children|sisters?|brothers?)\b"
            r"|\bi(?:'m| am) (?:married|divorced|engaged|widowed)\b|\bwe(?:'re| are) expecting\b)",
        ),
    ),
    (
        "date",
        8.0,
        lazy_pattern(
            rf"\bmy\s+(?:\w+\s+)?(?:birthday|anniversary|flight|surgery|operation|appointment|interview|wedding|"
            rf"exam|due date|deadline|move|lease)\b[^.?!]{{0,20}}?\b(?:is|was|on|at|in) (?:[^.?!\d]{{0,40}}?)(?:\d|{_DATE_WORD})"
            rf"|\b(?:birthday|anniversary) is\b",
            re.IGNORECASE,
        ),
    ),
    (
        "decision",
        7.5,
        lazy_pattern(
            r"\b(?:i|we)(?:'ve| have)? (?:finally )?decided\b|\b(?:i|we)(?:'re| are) going with\b"
            r"|\bi(?:'ve| have) (?:quit|resigned|signed|accepted the|booked|bought|sold)\b"
            r"|\bi(?:'m| am) (?:quitting|moving to|retiring)\b|\bi will never\b|\bfrom now on,? i\b",
            re.IGNORECASE,
        ),
    ),
    (
        "preference",
        7.0,
        lazy_pattern(
            r"\bi(?:'m| am) (?:a )?(?:vegan|vegetarian|pescatarian|teetotal|left-handed|colou?r ?blind)\b"
            r"|\bi (?:don't|do not|never) (?:eat|drink)\b|\bi (?:really |strongly )?(?:prefer|hate|can't stand|"
            r"cannot stand|love|dislike)\s+(?!it\b|this\b|that\b|you\b|the idea\b)"
            r"|\bmy fav(?:ou?rite)? \w+ (?:is|are)\b",
            re.IGNORECASE,
        ),
    ),
    (
        "place",
        7.0,
        lazy_pattern(
            r"\b(?i:i (?:live|work) (?:in|at|for))\s+[A-Z]"
            r"|(?i:\bi(?:'m| am) (?:a|an)\s+\w+\s+(?:by profession|at|in)\b|\bi work as\b|\bi(?:'ve| have)? moved to\b"
            r"|\bmy address is\b)",
        ),
    ),
]

# Not a statement of fact about the user: questions, wishes, hypotheticals, someone else's words.
_NOT_A_FACT = lazy_pattern(
    r"\?\s*$|^\s*(?:if|what if|suppose|imagine|maybe|perhaps|do you|would|could|should|can you|is it)\b"
    r"|\b(?:if i (?:were|was|had)|i wish|i wonder|pretend|my friend|a friend|someone|people who|"
    r"he said|she said|they said|in the (?:book|movie|film|story)|the character)\b",
    re.IGNORECASE,
)
# What these rules find is the user's even beside a pronoun or an agreement ("I'm allergic to it too").
_SAID_ALONE = frozenset({"health", "code", "identity", "family", "date"})
# A question: what opens it, whatever ends it ("should I tell her" said without its question mark).
_QUESTION = lazy_pattern(
    r"^\W*(?:what|how|why|where|when|who|which|whose|do|does|did|is|are|was|were|can|could|would|should|will|"
    r"shall|have|has|may|might|am|any|anything|isn't|aren't|don't|doesn't|didn't|won't)\b",
    re.IGNORECASE,
)
# The words that tie a clause to the one before or after it.
_TIES = lazy_pattern(
    r"^(?:(?:and|but|so|because|since|though|although|also|oh|well|yeah|yes|no|actually|anyway|btw|plus|ok|"
    r"okay)\b[,!.]?\s*)+|(?:[,;:]\s*(?:and|but|so|or)?|\s+(?:and|but|so|or))\s*$",
    re.IGNORECASE,
)
_DETAIL = lazy_pattern(rf"\d|\b{_DATE_WORD}\b", re.IGNORECASE)
_KEY_JUNK = lazy_pattern(r"[^\w\s]")
_CONTRACTIONS = {"i'm": "i am", "i've": "i have", "don't": "do not", "can't": "cannot", "we're": "we are"}


@dataclass(frozen=True)
class Statement:
    """A sentence of a user's turn the rules consider durable, with why and how much it matters."""

    text: str
    category: Category
    importance: float


def durable_statements(text: str) -> list[Statement]:
    """The clauses of `text` (a user's words) that state something durable about the user, each in
    the user's words: a statement said beside a question ("I'm allergic to penicillin, what should I
    tell my GP?") counts, the question does not."""
    found = []
    for sentence in sentences(text):
        for clause in clauses(sentence):
            if len(clause) < 6 or _NOT_A_FACT().search(clause) or _QUESTION().search(clause):
                continue
            for category, importance, pattern in _RULES:
                if pattern().search(clause):
                    # a liking read by the general reading too: "I love the dialogue" names nothing
                    if category in _SAID_ALONE or (
                        stands_alone(words(clause)) and (category != "preference" or is_durable(clause))
                    ):
                        found.append(Statement(_as_said(clause), category, importance))
                    break
            else:
                if is_durable(clause):
                    found.append(Statement(_as_said(clause), "personal", _PERSONAL))
    return found


def _as_said(clause: str) -> str:
    """A clause as an entry of its own: without the words that tied it to its neighbours ("but",
    "and so", a trailing comma), starting with a capital."""
    text = _TIES().sub("", clause).strip()
    return text[:1].upper() + text[1:] if text else clause


def turn_importance(turn: Turn) -> float:
    """0-10 by rules: a durable statement of the user scores as its rule says; otherwise a turn
    with dates or numbers matters more than small talk, and the user's words more than the
    assistant's (the assistant's answer can be asked again, what the user said cannot)."""
    if turn.role == "user":
        # read in bounded pieces: some rules take time with the square of a sentence's length
        statements = [s for piece in split_text(turn.text, READ_AT_ONCE) for s in durable_statements(piece)]
        if statements:
            return max(s.importance for s in statements)
    base = 3.0 if turn.role == "user" else 1.5
    if _DETAIL().search(turn.text):
        base += 1.5
    return base


def with_importance(turns: Sequence[Turn]) -> list[Turn]:
    """The turns, each with its importance (the rules' score when it has none yet): every store
    scores a turn the same way as it is appended."""
    return [t if t.importance is not None else t.model_copy(update={"importance": turn_importance(t)}) for t in turns]


def fact_key(content: str) -> str:
    """What makes two statements the same fact: case, punctuation, spacing and the usual
    contractions do not count."""
    text = content.casefold().replace("\u2019", "'")
    for short, long in _CONTRACTIONS.items():
        text = re.sub(rf"\b{short}\b", long, text)
    return " ".join(_KEY_JUNK().sub(" ", text).split())
