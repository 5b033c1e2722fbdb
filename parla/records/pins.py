"""Pins: facts kept in every prompt of a chat, ranked by importance: pinned by the user (`remember`,
manual) or found by the auto-pin detector (auto)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from .turn import new_id, storable_text, utcnow

PinType = Literal["manual", "auto", "code", "concept", "system"]


class Pin(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str = Field(default_factory=new_id)
    chat_id: str
    content: str = Field(min_length=1)
    importance: float = Field(default=5.0, ge=0, le=10)
    pin_type: PinType = "manual"
    # the turn the pinned fact was said in (its id, and its place in the chat for people to read)
    source_turn_id: str | None = None
    source_seq: int | None = None
    created_at: datetime = Field(default_factory=utcnow)
    # set when the user asked to forget it: out of every prompt, restorable from the CLI
    forgotten_at: datetime | None = None

    @field_validator("content")
    @classmethod
    def _storable(cls, content: str, info: ValidationInfo) -> str:
        return storable_text(content, f"pin {info.data.get('id')}")
