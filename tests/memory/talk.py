"""Chats as the profile's tests tell them: each user sentence answered by the assistant, a chat a
day, stored and compacted."""

from __future__ import annotations

from datetime import timedelta

from parla.memory.compaction.compactor import Compactor
from parla.records.turn import Turn
from tests.conftest import T0


def chat_turns(said: list[str], day: int) -> list[Turn]:
    turns = []
    for i, text in enumerate(said):
        moment = T0 + timedelta(days=day, minutes=2 * i)
        turns.append(Turn.of("user", text, created_at=moment))
        turns.append(Turn.of("model", "Noted, thank you for telling me.", created_at=moment + timedelta(minutes=1)))
    return turns


async def talk(store, compactor: Compactor, said: list[str], day: int) -> str:
    """A chat of what the user `said` on `day`, stored and compacted; its id."""
    chat = (await store.create_chat(turns=chat_turns(said, day))).chat
    await compactor.compact(chat.id)
    return chat.id
