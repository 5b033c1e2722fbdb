"""The voice session's memory for one chat, over the store: a fresh session is seeded with the
chat's memory context (the block for the system instruction, the tail turns as history), finished
turns are appended and compaction is scheduled in the background, never on the audio path.

Which store failures are for good is decided here: a turn the store refuses for good (its chat is
gone, the store cannot hold its content) is kept on this machine with the reason (`RefusedTurns`)
so it blocks no later turn; turns the Supabase store queued in its outbox while it is away count
as saved (the outbox sends them); any other failure (the SQLite file is locked or full) is raised
for the session to retry in order.

Turns the session holds back from the store a while (an answer the speaker still plays) are kept
meanwhile in a second file of the same kind (`held`, `<store>.held.jsonl` in the daemon) and
forgotten once their final version is stored; the daemon stores what is left there at start."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import InitVar, dataclass, field

from parla.memory.compaction.compactor import CompactionWorker
from parla.memory.config import MemoryConfig
from parla.memory.context import load_context
from parla.memory.errors import ChatNotFound, StoreOffline, StoreRefused, TurnConflict
from parla.memory.store.protocol import ChatsWithMemory
from parla.memory.store.refused import RefusedTurns
from parla.records.turn import Turn
from parla.voice.live.session_memory import Refused, Seed

# The same request fails the same way every time: the turn's chat is gone or taken, the server
# refused the content, or the content cannot be encoded for the store at all.
_FOR_GOOD = (ChatNotFound, TurnConflict, StoreRefused, ValueError, TypeError, sqlite3.IntegrityError, sqlite3.DataError)


HELD_REASON = "held while the speaker played it"


def refused_for_good(exc: BaseException) -> bool:
    return isinstance(exc, _FOR_GOOD)


def _reason(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


@dataclass
class ChatMemory:
    store: ChatsWithMemory
    config: MemoryConfig
    chat_id: str
    refused: RefusedTurns
    compaction: CompactionWorker | None = None
    # told of every turn once it is stored, with its sequence number (the inspector's live page)
    on_stored: Callable[[str, Sequence[Turn]], None] | None = None
    # turns held back from the store (one file for every chat, shared); None: a file beside the refused turns'
    held_turns: InitVar[RefusedTurns | None] = None
    held: RefusedTurns = field(init=False)

    def __post_init__(self, held_turns: RefusedTurns | None) -> None:
        self.held = held_turns or RefusedTurns(RefusedTurns.held_beside(self.refused.path))

    async def seed(self) -> Seed:
        context = await load_context(self.store, self.chat_id, self.config)
        return Seed(context.render(include_tail=False), context.tail)

    async def save(self, turns: list[Turn]) -> Refused | None:
        try:
            result = await self.store.append_turns(self.chat_id, turns)
        except StoreOffline:
            # the turns are durable in the local outbox, which sends them once Supabase answers
            return None
        except Exception as e:
            if not refused_for_good(e):
                raise
            return await self._save_each(turns)
        self._stored(result.turns)
        self._compact()
        return None

    async def _save_each(self, turns: list[Turn]) -> Refused | None:
        """One turn at a time, so only the turns the store refuses are kept aside; a failure that
        is not for good raises before anything is kept (the whole batch is retried: appends are
        idempotent by turn id)."""
        refused: list[tuple[Turn, str]] = []
        for turn in turns:
            try:
                result = await self.store.append_turns(self.chat_id, [turn])
            except Exception as e:
                if not refused_for_good(e):
                    raise
                refused.append((turn, _reason(e)))
                continue
            self._stored(result.turns)
        if len(refused) < len(turns):
            self._compact()
        if not refused:
            return None
        reasons = list(dict.fromkeys(reason for _, reason in refused))
        for reason in reasons:
            await self.refused.keep(self.chat_id, [t for t, r in refused if r == reason], reason)
        return Refused(len(refused), "; ".join(reasons), str(self.refused.path))

    async def keep(self, turns: list[Turn], reason: str) -> None:
        await self.refused.keep(self.chat_id, turns, reason)

    async def hold(self, turns: list[Turn]) -> None:
        await self.held.keep(self.chat_id, turns, HELD_REASON)

    async def forget(self, ids: list[str]) -> None:
        await self.held.forget(set(ids))

    def _stored(self, turns: Sequence[Turn]) -> None:
        if self.on_stored is not None:
            self.on_stored(self.chat_id, turns)

    def _compact(self) -> None:
        if self.compaction is not None:
            self.compaction.schedule(self.chat_id)
