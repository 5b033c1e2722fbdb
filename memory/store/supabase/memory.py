"""The Supabase store's summaries, facts and pins, and the user's profile (`supabase.profile`): what
is kept of the chats beside their turns. The user's own writes among them (pin, forget, restore)
go through the outbox (`supabase.writes`); these are the reads and compaction's writes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from supabase import AsyncClient

from parla.records.embedding import EmbeddedText
from parla.records.facts import FactBlock
from parla.records.pins import Pin
from parla.records.profile import ProfileEntry
from parla.records.summary import Summary, SummaryLevel
from parla.records.turn import MessageRange

from . import profile as supabase_profile
from .calls import SupabaseCalls
from .rows import fact_params, facts_of, is_uuid, summary_of, vector_value

_PIN_COLUMNS = "id,chat_id,content,importance,pin_type,source_turn_id,source_seq,created_at,forgotten_at"


class SupabaseMemory(SupabaseCalls):
    # -- summaries and facts ---------------------------------------------------------------

    async def upsert_summary(
        self,
        chat_id: str,
        level: SummaryLevel,
        rng: MessageRange,
        embedded: EmbeddedText,
        importance: float | None = None,
    ) -> Summary:
        row = await self._rpc(
            "upsert_summary",
            "store a summary",
            p_chat_id=chat_id,
            p_level=int(level),
            p_start_seq=rng.start,
            p_end_seq=rng.end,
            p_summary=embedded.text,
            p_embedding=vector_value(embedded.vector),
            p_embedder=embedded.embedder,
            p_importance=importance,
        )
        return summary_of(row)

    async def list_summaries(self, chat_id: str, level: SummaryLevel | None = None) -> list[Summary]:
        def build(c: AsyncClient) -> Any:
            q = (
                c.table("chat_summaries")
                .select("chat_id,level,start_seq,end_seq,summary,updated_at,importance")
                .eq("chat_id", chat_id)
            )
            if level is not None:
                q = q.eq("level", int(level))
            return q.order("level").order("start_seq").order("end_seq")

        if not is_uuid(chat_id):
            return []
        return [summary_of(r) for r in await self._select("list summaries", build)]

    async def upsert_facts(
        self, chat_id: str, rng: MessageRange, lines: list[str], embedded: EmbeddedText | None
    ) -> FactBlock:
        return facts_of(await self._rpc("upsert_facts", "store facts", **fact_params(chat_id, rng, lines, embedded)))

    async def list_facts(self, chat_id: str) -> list[FactBlock]:
        if not is_uuid(chat_id):
            return []
        rows = await self._select(
            "list facts",
            lambda c: (
                c.table("chat_facts")
                .select("chat_id,start_seq,end_seq,facts,forgotten,updated_at")
                .eq("chat_id", chat_id)
                .order("start_seq")
                .order("end_seq")
            ),
        )
        return [facts_of(r) for r in rows]

    # -- pins ------------------------------------------------------------------------------

    async def add_new_pins(self, pins: Sequence[Pin]) -> list[Pin]:
        return await self._upsert_pins(pins, "pin facts", ignore_duplicates=True) if pins else []

    async def list_pins(self, chat_id: str, *, forgotten: bool = False) -> list[Pin]:
        if not is_uuid(chat_id):
            return []
        rows = await self._select(
            "list pins",
            lambda c: (
                c.table("chat_pins")
                .select(_PIN_COLUMNS)
                .eq("chat_id", chat_id)
                .filter("forgotten_at", "not.is" if forgotten else "is", "null")
                .order("importance", desc=True)
                .order("created_at")
                .order("id")
            ),
        )
        return [Pin.model_validate(r) for r in rows]

    # -- the user's profile ----------------------------------------------------------------

    async def save_profile(self, entries: Sequence[ProfileEntry], *, edit: bool = False) -> list[ProfileEntry]:
        return await supabase_profile.save_profile(self._replay, entries, edit)

    async def list_profile(self, *, history: bool = False) -> list[ProfileEntry]:
        await self._replay.send_queued_first()  # the profile writes of this device's are seen
        return await supabase_profile.list_profile(self._rpc, history)

    async def set_profile_forgotten(self, entry_id: str, forgotten: bool) -> ProfileEntry:
        return await supabase_profile.set_profile_forgotten(self._replay, entry_id, forgotten)
