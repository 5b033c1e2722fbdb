"""Where every store's writes of turns come in: a turn without an importance is given the rules'
score here (`memory.language.importance`), once, and the backend stores each turn as it is given.

A store (SQLite, Supabase, the local copy) inherits `ScoredWrites` and writes `_create_chat` and
`_append_turns`; whoever calls it (the turn saver, an import, a sync, a tool) gets the same
importance for the same turn, whichever store it reaches.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from datetime import datetime

from parla.records.turn import Turn

from ..language.importance import with_importance
from .protocol import AppendResult


class ScoredWrites(ABC):
    """`ChatRecords.create_chat` and `append_turns`, with every turn scored before the backend's write."""

    async def create_chat(
        self,
        *,
        chat_id: str | None = None,
        title: str | None = None,
        created_at: datetime | None = None,
        turns: Sequence[Turn] = (),
    ) -> AppendResult:
        return await self._create_chat(chat_id, title, created_at, with_importance(turns))

    async def append_turns(self, chat_id: str, turns: Sequence[Turn]) -> AppendResult:
        return await self._append_turns(chat_id, with_importance(turns))

    @abstractmethod
    async def _create_chat(
        self, chat_id: str | None, title: str | None, created_at: datetime | None, turns: list[Turn]
    ) -> AppendResult:
        """`create_chat` of turns that each have their importance."""

    @abstractmethod
    async def _append_turns(self, chat_id: str, turns: list[Turn]) -> AppendResult:
        """`append_turns` of turns that each have their importance."""
