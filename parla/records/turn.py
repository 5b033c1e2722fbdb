"""A turn: one message of a chat, in the wire shape clients read (role, parts, thinking) plus its
metadata."""

from __future__ import annotations

import logging
import re
import uuid
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from .errors import RangeError

log = logging.getLogger("parla.memory")

# NUL: Postgres refuses it in text and in JSON; surrogates: not encodable as UTF-8 (SQLite, HTTP).
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
# A message number as a person types it: ASCII digits only (str.isdigit also takes "²", which
# int() refuses), and few enough that every store can hold it.
MESSAGE_NUMBER = re.compile(r"[0-9]{1,9}")

Role = Literal["user", "model"]
Source = Literal["voice", "text", "tool", "import"]


def utcnow() -> datetime:
    return datetime.now(UTC)


def local_time(moment: datetime) -> datetime:
    """`moment` in the local time zone; as it is when it is too near year 1 or 9999 to be moved
    there (a chat imported as made on 0001-01-01, seen from New York)."""
    try:
        return moment.astimezone()
    except OverflowError:
        return moment


def new_id() -> str:
    return str(uuid.uuid4())


def storable_text(text: str, what: str) -> str:
    """`text` as every store can hold it: each code point no store can hold (NUL, a lone UTF-16
    surrogate) becomes U+FFFD and a surrogate pair becomes the character it encodes; nothing else
    changes. Every turn (a live one, a typed `say`, an import), pin and chat title passes here, so
    both stores keep the same text."""
    if _UNSTORABLE.search(text) is None:
        return text
    repaired = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace").replace("\x00", "\ufffd")
    log.warning(
        "%s had code points no store can hold (NUL, lone surrogates): stored with U+FFFD in their place (%d replaced)",
        what,
        repaired.count("\ufffd") - text.count("\ufffd"),
    )
    return repaired


class Part(BaseModel):
    model_config = ConfigDict(frozen=True)
    text: str

    @field_validator("text")
    @classmethod
    def _storable(cls, text: str) -> str:
        return storable_text(text, "a turn's text")


class TokenUsage(BaseModel):
    """The tokens the Live service reported for a model turn (its usageMetadata): the prompt it
    read (context, audio heard, tool results), what it answered, their total, and of those the
    cached, thinking and tool-result tokens where it says."""

    model_config = ConfigDict(frozen=True)

    prompt_tokens: int | None = Field(None, ge=0)
    response_tokens: int | None = Field(None, ge=0)
    total_tokens: int | None = Field(None, ge=0)
    cached_tokens: int | None = Field(None, ge=0)
    thoughts_tokens: int | None = Field(None, ge=0)
    tool_use_prompt_tokens: int | None = Field(None, ge=0)


class WebSource(BaseModel):
    """A web page an answer was grounded on (a look-up's Google Search result): its title, as
    the search gives it (often the site's name), and its address."""

    model_config = ConfigDict(frozen=True)
    title: str
    uri: str

    @field_validator("title", "uri")
    @classmethod
    def _storable(cls, text: str) -> str:
        return storable_text(text, "a source of a turn")


class Turn(BaseModel):
    """`{role, parts:[{text}], thinking?}` plus a stable id (for idempotent writes), the sequence
    number the store assigned (0 until stored), when it was said, whether the model was cut off
    (then the text holds only what was actually spoken), where it came from and which model
    answered."""

    model_config = ConfigDict(frozen=True)

    id: str = Field(default_factory=new_id)
    role: Role
    parts: list[Part]
    thinking: str | None = None
    seq: int = 0
    created_at: datetime = Field(default_factory=utcnow)
    interrupted: bool = False
    source: Source = "voice"
    model_variant: str | None = None
    # 0-10, how much the turn matters later (memory.language.importance); set by the store as it is appended
    importance: float | None = Field(default=None, ge=0, le=10)
    usage: TokenUsage | None = None  # model turns of a live session
    # the web pages a model turn's answer came from (a look-up), in the order the search gave them
    sources: list[WebSource] = Field(default_factory=list)

    @field_validator("thinking")
    @classmethod
    def _storable_thinking(cls, thinking: str | None, info: ValidationInfo) -> str | None:
        return thinking if thinking is None else storable_text(thinking, f"the thinking of turn {info.data.get('id')}")

    @field_validator("sources", mode="before")
    @classmethod
    def _no_sources(cls, value: object) -> object:
        return [] if value is None else value  # a stored turn without any: NULL

    @field_validator("created_at")
    @classmethod
    def _aware(cls, value: datetime) -> datetime:
        return value if value.tzinfo else value.replace(tzinfo=UTC)

    @classmethod
    def of(cls, role: Role, text: str, **fields: Any) -> Turn:
        return cls(role=role, parts=[Part(text=text)], **fields)

    @property
    def text(self) -> str:
        return "".join(part.text for part in self.parts)

    def wire_shape(self) -> dict[str, Any]:
        """The wire and storage shape clients read: role, parts and thinking only."""
        shape: dict[str, Any] = {"role": self.role, "parts": [{"text": p.text} for p in self.parts]}
        if self.thinking:
            shape["thinking"] = self.thinking
        return shape

    def transcript_line(self) -> str:
        speaker = "User" if self.role == "user" else "Assistant"
        return f"{speaker}: {self.text}"


class MessageRange(BaseModel):
    """Inclusive range of turn sequence numbers."""

    model_config = ConfigDict(frozen=True)

    start: int
    end: int

    def __str__(self) -> str:
        return f"{self.start}-{self.end}"

    @property
    def label(self) -> str:
        """As people read it: `12` for one turn, `11-20` for more."""
        return str(self.start) if self.start == self.end else str(self)

    @classmethod
    def parse(cls, text: str) -> MessageRange:
        """`11-20` as a range (what `str` gives); `RangeError` for anything else."""
        start, sep, end = (t.strip() for t in text.partition("-"))
        if not sep or not MESSAGE_NUMBER.fullmatch(start) or not MESSAGE_NUMBER.fullmatch(end):
            raise RangeError(f"a range is two message numbers like 11-20, not {text!r}")
        return cls(start=int(start), end=int(end))

    def contains(self, other: MessageRange) -> bool:
        return self.start <= other.start and other.end <= self.end
