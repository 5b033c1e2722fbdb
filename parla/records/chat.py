"""A chat and its two histories: the full transcript the user sees and what the model gets."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, field_validator

from .assistant_history import build_assistant_history
from .turn import Turn, storable_text

# A title is one line of a list: a longer one (a pasted page) is cut, where it is stored and where
# one stored before the cap is read.
MAX_TITLE_CHARS = 200


def _capped(title: str | None) -> str | None:
    if title is None or len(title) <= MAX_TITLE_CHARS:
        return title
    return title[: MAX_TITLE_CHARS - 1].rstrip() + "…"


class Chat(BaseModel):
    """One conversation. `summary_text` is the chat's plain-text description used for search
    (the opening turns while the chat is young, the rolling summary after its first compaction);
    `rolling_summary` covers turns 1..summarized_through; `compaction_version` increases with every
    committed compaction so a commit can tell whether it raced another."""

    model_config = ConfigDict(frozen=True)

    id: str
    title: str | None = None
    # Parla made the title and may refresh it when the chat drifts; a user's title is kept
    title_generated: bool = False
    created_at: datetime
    last_activity_at: datetime
    summary_text: str = ""
    rolling_summary: str = ""
    summarized_through: int = 0
    compaction_version: int = 0
    turn_count: int = 0

    _short_title = field_validator("title")(_capped)

    @property
    def display_title(self) -> str:
        return self.title or "(untitled)"


class ChatHistory(BaseModel):
    """A chat with every turn of its full_history, in order."""

    model_config = ConfigDict(frozen=True)

    chat: Chat
    full_history: list[Turn]

    @property
    def tail(self) -> list[Turn]:
        """The turns not yet folded into the rolling summary: the verbatim part."""
        return [t for t in self.full_history if t.seq > self.chat.summarized_through]

    @property
    def assistant_history(self) -> list[Turn]:
        return build_assistant_history(self.chat.rolling_summary, self.tail)


def storable_title(title: str | None, chat_id: str) -> str | None:
    """A chat title (given, imported or generated) as every store can hold it."""
    return None if title is None else _capped(storable_text(title, f"the title of chat {chat_id}"))
