"""The Supabase store's writes the user asks for: rename or delete a chat, pin, forget or restore a
pin or a fact line, delete a pin, and the profile's writes (`supabase_profile`). Like turns, each is queued in the outbox first and sent from
there in order, so one made while Supabase is away waits (`WriteQueued`) instead of being lost,
and a forget never reaches the server before its pin.

Each is idempotent on replay: the pin or chat id was chosen on this device, a rename or forget
sets a value (the moment of a forget is taken when it was asked), and a delete of what is gone
already is done. A chat deleted elsewhere (or a pin) refuses the write for good: it is kept in
the outbox, marked failed, and the writes after it go on.
"""

from __future__ import annotations

from typing import Any

from parla.records.chat import Chat, storable_title
from parla.records.embedding import EmbeddedText
from parla.records.facts import FactBlock, format_fact_lines
from parla.records.pins import Pin
from parla.records.turn import MessageRange, utcnow

from ...errors import ChatNotFound, StoreError
from ..checks import pin_not_found
from ..outbox import OutboxEntry
from . import profile as supabase_profile
from .calls import SupabaseCalls
from .rows import chat_of, fact_params, facts_of, is_uuid

USER_WRITES = (
    frozenset({"add_pin", "rename_chat", "set_pin_forgotten", "delete_pin", "delete_chat", "set_fact_lines"})
    | supabase_profile.PROFILE_WRITES
)


class SupabaseWrites(SupabaseCalls):
    async def rename_chat(self, chat_id: str, title: str) -> Chat:
        if not title.strip():
            raise StoreError("a chat title cannot be empty")
        if not is_uuid(chat_id):
            raise ChatNotFound(chat_id)
        result: Chat = await self._replay.write_through(
            "rename_chat", chat_id, {"title": storable_title(title.strip(), chat_id)}
        )
        return result

    async def delete_chat(self, chat_id: str) -> None:
        if not is_uuid(chat_id):
            raise ChatNotFound(chat_id)
        if not await self._replay.write_through("delete_chat", chat_id, {}):
            raise ChatNotFound(chat_id)

    async def set_fact_lines(
        self, chat_id: str, rng: MessageRange, lines: list[str], forgotten: list[str], embedded: EmbeddedText | None
    ) -> FactBlock:
        params = {**fact_params(chat_id, rng, lines, embedded), "p_forgotten": format_fact_lines(forgotten)}
        result: FactBlock = await self._replay.write_through("set_fact_lines", chat_id, params)
        return result

    async def add_pin(self, pin: Pin) -> Pin:
        if not is_uuid(pin.chat_id):
            raise ChatNotFound(pin.chat_id)
        row = pin.model_dump(mode="json", exclude={"forgotten_at"}, exclude_none=True)
        result: Pin = await self._replay.write_through("add_pin", pin.chat_id, {"pin": row})
        return result

    async def set_pin_forgotten(self, pin_id: str, forgotten: bool) -> Pin:
        if not is_uuid(pin_id):
            raise pin_not_found(pin_id)
        moment = utcnow().isoformat() if forgotten else None
        payload = {"pin_id": pin_id, "forgotten_at": moment}
        result: Pin = await self._replay.write_through("set_pin_forgotten", "", payload)
        return result

    async def delete_pin(self, pin_id: str) -> None:
        if not is_uuid(pin_id):
            raise pin_not_found(pin_id)
        if not await self._replay.write_through("delete_pin", "", {"pin_id": pin_id}):
            raise pin_not_found(pin_id)

    async def _send_user_write(self, entry: OutboxEntry) -> Any:
        """One queued user write, sent; its result as the write's method returns it."""
        p = entry.payload
        if entry.op == "add_pin":
            (stored,) = await self._upsert_pins([Pin.model_validate(p["pin"])], "pin a fact", ignore_duplicates=False)
            return stored
        if entry.op == "rename_chat":
            return chat_of(await self._rpc("rename_chat", "rename a chat", p_chat_id=entry.chat_id, p_title=p["title"]))
        if entry.op == "delete_chat":
            # Not found: deleted already, elsewhere or by an earlier try whose answer was lost; the
            # latter is this write's own work, not a chat the caller named wrongly
            try:
                await self._rpc("delete_chat", "delete a chat", p_chat_id=entry.chat_id)
            except ChatNotFound:
                return entry.tried_before
            return True
        if entry.op == "set_fact_lines":
            return facts_of(await self._rpc("set_fact_lines", "change facts", **p))
        if entry.op in supabase_profile.PROFILE_WRITES:
            return await supabase_profile.send(self._rpc, entry)
        forgetting = entry.op == "set_pin_forgotten"
        doing = ("forget a pin" if p["forgotten_at"] else "restore a pin") if forgetting else "delete a pin"

        def change(c: Any) -> Any:
            pins = c.table("chat_pins")
            return (pins.update({"forgotten_at": p["forgotten_at"]}) if forgetting else pins.delete()).eq(
                "id", p["pin_id"]
            )

        rows = await self._change(doing, change)
        if not forgetting:
            return bool(rows) or entry.tried_before  # as a chat's delete
        if not rows:
            raise pin_not_found(p["pin_id"])
        return Pin.model_validate(rows[0])
