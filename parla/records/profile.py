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
from collections.abc import Iterable
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from .turn import new_id, storable_text, utcnow

ProfileOrigin = Literal["remember", "auto", "user"]


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


def ranked(entries: Iterable[ProfileEntry]) -> list[ProfileEntry]:
    """Current entries, most important first and the most recent first among equals."""
    return sorted((e for e in entries if e.current), key=lambda e: (-e.importance, -e.said_at.timestamp(), e.id))
