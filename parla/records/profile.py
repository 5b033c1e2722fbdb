"""The user's profile: what Parla knows about the user across every chat.

Each entry is one short sentence about the user (who they are, people in their life, places,
health, preferences, possessions, routines, plans with dates) with its importance and where it
was said (chat, turn, moment). It is filled by `remember` when the model says the fact is about
the user, and by the detector of durable statements (the auto-pin rules, or the summary model
with a Gemini key) as chats are compacted. Every chat's context carries it.

A newer entry about the same thing (its `subject`: "home", "daughter name", "wifi password")
supersedes the older one: the older stays stored, as history with its own source, and leaves the
prompt. The subject is what the model gives to `remember`, or what the rules read from the
sentence; a sentence with no recognisable subject supersedes nothing (two allergies are both kept).
Forgetting is soft, as for pins.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from parla.memory.language.auto_pins import PinCandidate, unframed, unsaid
from parla.memory.language.importance import fact_key
from parla.kernel.patterns import lazy_pattern
from parla.records.turn import new_id, storable_text, utcnow

ProfileOrigin = Literal["remember", "auto", "user"]

_NAMESPACE = uuid.UUID("0b7f4f3e-2f55-4a3c-9d3e-6a1d2c9e8b21")


class ProfileEntry(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str = Field(default_factory=new_id)
    content: str = Field(min_length=1)
    importance: float = Field(default=5.0, ge=0, le=10)
    # what the entry is about; a newer entry of the same subject supersedes it
    subject: str | None = None
    origin: ProfileOrigin = "auto"
    # where it was said: None for an entry the user wrote in the CLI or the inspector
    chat_id: str | None = None
    source_turn_id: str | None = None
    source_seq: int | None = None
    said_at: datetime = Field(default_factory=utcnow)
    created_at: datetime = Field(default_factory=utcnow)
    superseded_by: str | None = None
    superseded_at: datetime | None = None
    forgotten_at: datetime | None = None

    @field_validator("content")
    @classmethod
    def _storable(cls, content: str, info: ValidationInfo) -> str:
        return storable_text(content, f"profile entry {info.data.get('id')}")

    @field_validator("subject")
    @classmethod
    def _subject(cls, subject: str | None) -> str | None:
        return normal_subject(subject) if subject else None

    @property
    def current(self) -> bool:
        """In the prompt: neither superseded nor forgotten."""
        return self.superseded_by is None and self.forgotten_at is None


def normal_subject(subject: str) -> str | None:
    """ "My daughter's name" and "daughter name" are one subject."""
    words = [w for w in re.sub(r"'s\b|[^\w\s-]", " ", subject.casefold()).split() if w not in _SUBJECT_FRAME]
    return " ".join(words) or None


_SUBJECT_FRAME = frozenset({"my", "the", "user", "users", "user's", "of", "a", "an", "his", "her", "their"})

_RELATIVE = (
    r"wife|husband|partner|girlfriend|boyfriend|son|daughter|mother|mom|mum|father|dad|sister|brother|"
    r"grandmother|grandma|grandfather|grandpa|baby|fiancée?|cat|dog|boss|doctor|dentist|best friend"
)
_DATED = r"birthday|anniversary|flight|surgery|operation|appointment|interview|wedding|exam|due date|deadline|lease"

# (pattern over the case-folded sentence, subject or a template of its groups): the first that matches decides.
_SUBJECTS: list[tuple[Callable[[], re.Pattern[str]], str]] = [
    (lazy_pattern(r"\bmy name is\b|\bcall me\b"), "name"),
    (lazy_pattern(r"\bi(?:'m| am) \d{1,3}(?: years old| now)?\b|\bi turn(?:ed)? \d{1,3}\b"), "age"),
    (
        lazy_pattern(
            r"\b(?:i|we)(?:'ve| have|'re| are|'m| am)? (?:now )?(?:live|moved|moving|relocated)\b"
            r"|\bmy (?:home )?address is\b"
        ),
        "home",
    ),
    (
        lazy_pattern(
            r"\bi work (?:at|for|as)\b|\bmy job is\b|\bi(?:'m| am) (?:a|an) [\w-]+ by profession\b"
            r"|\bi(?:'ve| have)? (?:quit|resigned|retired)\b|\bi(?:'m| am) (?:quitting|retiring)\b"
        ),
        "work",
    ),
    (lazy_pattern(r"\bi(?:'m| am) (?:now )?(?:a )?(?:vegan|vegetarian|pescatarian)\b"), "diet"),
    (lazy_pattern(r"\bi(?:'m| am) (?:now )?(?:married|divorced|engaged|widowed|single)\b"), "relationship"),
    (
        lazy_pattern(r"\b(door|gate|lock|alarm|garage|locker|safe|wifi|wi-fi|building|entry)\s+(code|password|pin)\b"),
        "{0} {1}",
    ),
    (lazy_pattern(r"\bmy fav(?:ou?rite)? ([\w-]+)"), "favourite {0}"),
    (lazy_pattern(rf"\bmy ((?:{_RELATIVE}))(?:'s name is| is called| is named| is [a-z]+ named)\b"), "{0} name"),
    (lazy_pattern(rf"\bmy (?:next )?({_DATED})\b"), "{0}"),
]


def subject_of(sentence: str) -> str | None:
    """What a first-person sentence is about, when the rules recognise it."""
    text = sentence.casefold().replace("\u2019", "'")
    for pattern, template in _SUBJECTS:
        match = pattern().search(text)
        if match:
            return normal_subject(template.format(*(g.replace("wi-fi", "wifi") for g in match.groups())))
    return None


def profile_entry_id(source_turn_id: str, content: str) -> str:
    """An automatic entry's id, from its turn and its fact: two runs that find it write one row."""
    return str(uuid.uuid5(_NAMESPACE, f"{source_turn_id}\n{fact_key(content)}"))


def new_profile_entries(
    chat_id: str, candidates: Iterable[PinCandidate], existing: Iterable[ProfileEntry]
) -> list[ProfileEntry]:
    """Entries for the candidates about the user (a detector's statements about this chat's topic
    only stay pins) that say something no current or forgotten entry says (a superseded one may
    be said again: "I live in Turin" once more)."""
    return [
        ProfileEntry(
            id=profile_entry_id(c.source.id, c.content),
            # the section's heading says whose words they are
            content=unframed(c.content),
            importance=c.importance,
            subject=c.subject or subject_of(c.content),
            origin="auto",
            chat_id=chat_id,
            source_turn_id=c.source.id,
            source_seq=c.source.seq,
            said_at=c.source.created_at,
        )
        for c in unsaid(
            (c for c in candidates if c.about_user), (e.content for e in existing if e.superseded_by is None)
        )
    ]


def ranked(entries: Iterable[ProfileEntry]) -> list[ProfileEntry]:
    """Current entries, most important first and the most recent first among equals."""
    return sorted((e for e in entries if e.current), key=lambda e: (-e.importance, -e.said_at.timestamp(), e.id))
