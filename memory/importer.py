"""Reading chats from JSONL (one chat per line) for `parla import`.

A line: {"id"?, "title"?, "created_at"?, "turns": [{"role": "user"|"model", "text" or "parts",
"created_at"?, "thinking"?}]}. Ids are made deterministic so that importing the same file again
adds nothing: a chat without an id gets one derived from its content, a chat id that is not a
UUID is mapped to one (the Supabase schema keys chats by UUID), and turn ids derive from the chat
id and the turn's position (a line that gained turns at its end appends only those)."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from memory.turn import Part, Role, Turn, storable_text, utcnow

_NAMESPACE = uuid.UUID("6f1c4a52-52a4-4c55-9a53-7c1bd0a7c0de")


class ImportLineError(ValueError):
    """One line could not be imported; says which line and why."""

    def __init__(self, line_no: int, reason: str) -> None:
        super().__init__(f"line {line_no}: {reason}")
        self.line_no = line_no
        self.reason = reason


class ImportTurn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    role: Role
    text: str | None = None
    parts: list[Part] | None = None
    thinking: str | None = None
    created_at: datetime | None = None

    @field_validator("text")
    @classmethod
    def _storable(cls, text: str | None) -> str | None:
        # before the chat's id is derived from the text (and hashing needs encodable text)
        return None if text is None else storable_text(text, "a turn's text")

    @model_validator(mode="after")
    def _one_text(self) -> ImportTurn:
        if (self.text is None) == (self.parts is None):
            raise ValueError('give the turn either "text" or "parts", not both or neither')
        if not self.joined.strip():
            raise ValueError("the turn has no text")
        return self

    @property
    def joined(self) -> str:
        return self.text if self.text is not None else "".join(p.text for p in self.parts or [])


class ImportChat(BaseModel):
    model_config = ConfigDict(extra="ignore")

    id: str | None = Field(None, min_length=1)
    title: str | None = None
    created_at: datetime | None = None
    turns: list[ImportTurn] = Field(min_length=1)


def _aware(value: datetime) -> datetime:
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def _describe(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "the line"
    more = f" (and {error.error_count() - 1} more problems)" if error.error_count() > 1 else ""
    return f"{where}: {first['msg']}{more}"


def parse_line(line_no: int, line: str) -> ImportChat:
    try:
        data = json.loads(line)
    except json.JSONDecodeError as e:
        raise ImportLineError(line_no, f"not valid JSON ({e.msg} at column {e.colno})") from None
    if not isinstance(data, dict):
        raise ImportLineError(line_no, 'expected a JSON object with a "turns" list')
    try:
        return ImportChat.model_validate(data)
    except ValidationError as e:
        raise ImportLineError(line_no, _describe(e)) from None


def external_chat_id(given: str) -> str:
    """The store id of a chat imported with id `given` (a UUID stays itself)."""
    try:
        return str(uuid.UUID(given))
    except ValueError:
        return str(uuid.uuid5(_NAMESPACE, f"id:{given}"))


def chat_id_of(chat: ImportChat) -> str:
    if chat.id is not None:
        return external_chat_id(chat.id)
    content = json.dumps([[t.role, t.joined] for t in chat.turns], ensure_ascii=False)
    return str(uuid.uuid5(_NAMESPACE, f"content:{content}"))


def turns_of(chat: ImportChat, chat_id: str, now: datetime | None = None) -> list[Turn]:
    """Turns with deterministic ids; a turn without a timestamp follows the previous one by a
    second (the first falls back to the chat's created_at, else the import time)."""
    namespace = uuid.UUID(chat_id)
    previous = _aware(chat.created_at) if chat.created_at else None
    turns = []
    for index, t in enumerate(chat.turns):
        created = _aware(t.created_at) if t.created_at else (previous + timedelta(seconds=1) if previous else None)
        created = created or now or utcnow()
        previous = created
        turns.append(
            Turn(
                id=str(uuid.uuid5(namespace, str(index))),
                role=t.role,
                parts=t.parts if t.parts is not None else [Part(text=t.text or "")],
                thinking=t.thinking,
                created_at=created,
                source="import",
            )
        )
    return turns
