"""The Supabase store's timers and reminders (parla.records.reminder): the functions of the migration
`parla_reminders`. Adding and cancelling are writes the user asks for, so they go through the
outbox like a pin (one made while Supabase is away waits, `WriteQueued`); the claim is the atomic
decision of which device says a reminder, so it needs the server and is never queued. The mark
that a reminder was said to its end is queued too (migration `parla_reminder_said`): one said
while the server is away reaches it later, and the reads of the unsaid ones send it first."""

from __future__ import annotations

from typing import Any

from parla.records.reminder import Reminder

from ...errors import StoreRefused
from ..checks import reminder_not_found
from ..outbox import OutboxEntry
from .rows import is_uuid
from .writes import SupabaseWrites

REMINDER_WRITES = frozenset({"add_reminder", "cancel_reminder", "mark_reminder_said"})


class SupabaseReminders(SupabaseWrites):
    async def add_reminder(self, reminder: Reminder) -> Reminder:
        payload = reminder.model_dump(
            mode="json", exclude={"state", "claimed_by", "fired_at", "said_at", "cancelled_at"}, exclude_none=True
        )
        result: Reminder = await self._replay.write_through("add_reminder", "", {"reminder": payload})
        return result

    async def cancel_reminder(self, reminder_id: str) -> Reminder:
        if not is_uuid(reminder_id):
            raise reminder_not_found(reminder_id)
        result: Reminder = await self._replay.write_through("cancel_reminder", "", {"reminder_id": reminder_id})
        return result

    async def list_reminders(self, *, history: bool = False) -> list[Reminder]:
        rows = await self._rpc("list_reminders", "read the reminders", p_history=history)
        return [Reminder.model_validate(r) for r in rows]

    async def claim_reminder(self, reminder_id: str, device: str) -> Reminder | None:
        if not is_uuid(reminder_id):
            return None
        row = await self._rpc("claim_reminder", "claim a reminder", p_id=reminder_id, p_device=device)
        return None if row is None else Reminder.model_validate(row)

    async def mark_reminder_said(self, reminder_id: str, device: str) -> Reminder | None:
        if not is_uuid(reminder_id):
            return None
        result: Reminder | None = await self._replay.write_through(
            "mark_reminder_said", "", {"reminder_id": reminder_id, "device": device}
        )
        return result

    async def unsaid_reminders(self, device: str, stale_s: float) -> list[Reminder]:
        await self._replay.send_queued_first()  # a mark waiting in the outbox is not said again
        rows = await self._rpc(
            "unsaid_reminders", "read the reminders said in part", p_device=device, p_stale_s=stale_s
        )
        return [Reminder.model_validate(r) for r in rows]

    async def reclaim_reminder(self, reminder_id: str, device: str, stale_s: float) -> Reminder | None:
        if not is_uuid(reminder_id):
            return None
        row = await self._rpc(
            "reclaim_reminder", "claim a reminder again", p_id=reminder_id, p_device=device, p_stale_s=stale_s
        )
        return None if row is None else Reminder.model_validate(row)

    async def _send_reminder_write(self, entry: OutboxEntry) -> Any:
        p = entry.payload
        if entry.op == "add_reminder":
            return Reminder.model_validate(await self._rpc("add_reminder", "set a reminder", p_reminder=p["reminder"]))
        if entry.op == "mark_reminder_said":
            row = await self._rpc(
                "mark_reminder_said", "mark a reminder said", p_id=p["reminder_id"], p_device=p["device"]
            )
            return None if row is None else Reminder.model_validate(row)
        try:
            row = await self._rpc("cancel_reminder", "cancel a reminder", p_id=p["reminder_id"])
        except StoreRefused as e:
            raise reminder_not_found(p["reminder_id"]) from e
        return Reminder.model_validate(row)
