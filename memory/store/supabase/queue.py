"""The Supabase store's queue of chats waiting for their summaries (memory.compaction.summary_queue): the
functions of the migration `parla_summary_queue`, each one request."""

from __future__ import annotations

from collections.abc import Sequence

from ..protocol import QueueState
from .calls import SupabaseCalls
from .rows import is_uuid


class SupabaseQueue(SupabaseCalls):
    async def queue_summaries(self, chat_ids: Sequence[str]) -> None:
        ids = [cid for cid in dict.fromkeys(chat_ids) if is_uuid(cid)]
        if ids:
            await self._rpc("queue_summaries", "queue chats for summaries", p_chat_ids=ids)

    async def take_summary(self, lease_s: float) -> str | None:
        taken = await self._rpc("take_summary", "take a chat to summarise", p_lease_s=lease_s)
        return str(taken) if taken else None

    async def settle_summary(self, chat_id: str, retry_in_s: float | None = None, error: str | None = None) -> None:
        if is_uuid(chat_id):
            await self._rpc(
                "settle_summary",
                "settle a queued chat",
                p_chat_id=chat_id,
                p_retry_in_s=retry_in_s,
                p_error=error,
            )

    async def summary_queue(self) -> QueueState:
        data = await self._rpc("summary_queue_state", "read the summary queue")
        return QueueState(
            waiting=int(data["waiting"]), next_due_in_s=data["next_due_in_s"], last_error=data["last_error"]
        )
