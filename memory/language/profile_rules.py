"""The profile's rules (the entries themselves are `parla.records.profile`): what a first-person
sentence is about (its subject, so a newer entry supersedes an older one of the same subject), and
the entries a detector's candidates make, with ids stable across runs.

A subject is something that holds one value at a time: where the user lives, their job, their
name, a door's code, their daughter's name, their birthday. Two sentences of one subject say
different values of it, so the newer contradicts the older and replaces it. A sentence that only
touches a subject names none, and supersedes nothing: "I'm moving to Valencia for work" and "we're
moving flats on 15 March" are plans, both kept; so are two flights, two appointments, two
allergies."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterable

from parla.kernel.patterns import lazy_pattern
from parla.records.profile import ProfileEntry, normal_subject

from .auto_pins import PinCandidate, unframed, unsaid
from .importance import fact_key

_NAMESPACE = uuid.UUID("0b7f4f3e-2f55-4a3c-9d3e-6a1d2c9e8b21")

_RELATIVE = (
    r"wife|husband|partner|girlfriend|boyfriend|son|daughter|mother|mom|mum|father|dad|sister|brother|"
    r"grandmother|grandma|grandfather|grandpa|baby|fiancée?|cat|dog|boss|doctor|dentist|best friend"
)
# the dates a person has one of (a person has many flights and appointments)
_DATED = r"birthday|anniversary|wedding|due date"

# (pattern over the case-folded sentence, subject or a template of its groups): the first that matches decides.
_SUBJECTS: list[tuple[Callable[[], re.Pattern[str]], str]] = [
    (lazy_pattern(r"\bmy name is\b|\bcall me\b"), "name"),
    (lazy_pattern(r"\bi(?:'m| am) \d{1,3}(?: years old| now)?\b|\bi turn(?:ed)? \d{1,3}\b"), "age"),
    (
        lazy_pattern(
            # where the user lives now, not a move they plan ("I'm moving to Valencia")
            r"\b(?:i|we)(?:'ve| have)? (?:now |just |finally )?(?:live|moved|relocated) (?:in|to)\b"
            r"|\bmy (?:home )?address is\b"
        ),
        "home",
    ),
    (
        lazy_pattern(
            r"\bi work (?:at|for|as)\b|\bmy job is\b|\bi(?:'m| am) (?:a|an) [\w-]+ by profession\b"
            r"|\bi(?:'ve| have)? (?:quit|left) my job\b|\bi(?:'ve| have)? (?:resigned|retired)\b"
            r"|\bi(?:'m| am) (?:retiring)\b"
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
