"""The voice session's memory for one chat, over the store: a fresh session is seeded with the
chat's memory context (the block for the system instruction, the tail turns as history), finished
turns are appended and compaction is scheduled in the background, never on the audio path."""

from __future__ import annotations

from dataclasses import dataclass

from memory.compaction import CompactionWorker
from memory.config import MemoryConfig
from memory.context import load_context
from memory.store import ChatStore
from memory.turn import Turn
from voice.seed import Seed


@dataclass
class ChatMemory:
    store: ChatStore
    config: MemoryConfig
    chat_id: str
    compaction: CompactionWorker | None = None

    async def seed(self) -> Seed:
        context = await load_context(self.store, self.chat_id, self.config)
        return Seed(context.render(include_tail=False), context.tail)

    async def save(self, turns: list[Turn]) -> None:
        await self.store.append_turns(self.chat_id, turns)
        if self.compaction is not None:
            self.compaction.schedule(self.chat_id)
