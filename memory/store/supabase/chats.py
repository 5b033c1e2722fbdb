"""The Supabase store's chats, their turns and the commit of a compaction. Turns are written through
the outbox (`OutboxReplay.write_through`) and sent from it in pages (`_send_turns`); reads send
what this device queued first, so it reads its own writes."""

from __future__ import annotations

import logging
from datetime import datetime

from parla.records.chat import Chat, ChatHistory, storable_title
from parla.records.embedding import EmbeddedText
from parla.records.pins import Pin
from parla.records.turn import Turn, new_id

from ...errors import ChatNotFound, StoreError
from ...language.importance import IMPORTANT
from ..checks import check_unique_turn_ids, exact_id_first
from ..outbox import OutboxEntry
from ..protocol import AppendResult, CompactionCommit, MemorySnapshot
from ..scoring import ScoredWrites
from .calls import SupabaseCalls
from .rows import (
    append_result,
    chat_of,
    chunks,
    facts_of,
    is_uuid,
    page_key,
    summary_of,
    turn_payload,
    vector_value,
)

log = logging.getLogger("parla.memory.store.supabase.store")

_CHAT_COLUMNS = "id,title,title_generated,created_at,last_activity_at,summary_text,rolling_summary,summarized_through,compaction_version,turn_count"
# Turns per write request, and per page of a long history: each request stays small and far
# inside the statement timeout (8 s for signed-in users), whatever the chat's length.
TURN_PAGE = 500


class SupabaseChats(ScoredWrites, SupabaseCalls):
    # -- chats -----------------------------------------------------------------------------

    async def _create_chat(
        self, chat_id: str | None, title: str | None, created_at: datetime | None, turns: list[Turn]
    ) -> AppendResult:
        chat_id = chat_id or new_id()
        if not is_uuid(chat_id):
            raise StoreError(f"a Supabase chat id is a UUID, not {chat_id!r}")
        created = created_at or (turns[0].created_at if turns else None)
        payload = {
            "title": storable_title(title, chat_id),
            "created_at": created.isoformat() if created else None,
            "turns": [turn_payload(t) for t in turns],
        }
        result: AppendResult = await self._replay.write_through("create_chat", chat_id, payload)
        return result

    async def _append_turns(self, chat_id: str, turns: list[Turn]) -> AppendResult:
        if not is_uuid(chat_id):
            raise ChatNotFound(chat_id)
        if not turns:
            return AppendResult(await self.get_chat(chat_id), [], 0)
        check_unique_turn_ids(turns)
        payload = {"turns": [turn_payload(t) for t in turns]}
        result: AppendResult = await self._replay.write_through("append_turns", chat_id, payload)
        return result

    async def _send_turns(self, entry: OutboxEntry) -> AppendResult:
        """A queued write of turns, sent in pages: the first with the chat's creation, the others
        appended. Each page is idempotent by turn id, so a retry after a partial send stores every
        turn once, and carries a key of its own, so a retry of a page whose answer was lost gets
        that answer (its turns counted added) rather than "all stored already"."""
        p = entry.payload
        results = []
        for number, page in enumerate(chunks(p["turns"], TURN_PAGE)):
            create = entry.op == "create_chat" and number == 0
            key = page_key(entry.key, number)
            if not create:
                try:
                    data = await self._rpc(
                        "append_turns", "append turns", p_chat_id=entry.chat_id, p_turns=page, p_write_key=key
                    )
                except ChatNotFound:
                    if number:
                        raise
                    # Talk wins over delete: the chat was deleted (on another device) while this one
                    # talked in it; it comes back with what was said here since, so nothing said is lost.
                    # Another user's chat id stays refused: its creation fails the same way.
                    log.warning(
                        "chat %s was deleted elsewhere: brought back with the turns said in it here", entry.chat_id
                    )
                    create = True
            if create:
                data = await self._rpc(
                    "create_chat",
                    "create a chat",
                    p_chat_id=entry.chat_id,
                    p_title=p.get("title"),
                    p_created_at=p.get("created_at"),
                    p_turns=page,
                    p_write_key=key,
                )
            results.append(data)
        return append_result(results, [Turn.model_validate(t) for t in p["turns"]])

    async def get_chat(self, chat_id: str) -> Chat:
        return (await self._load(chat_id, 1, 0))[0]

    async def _load(self, chat_id: str, start: int, end: int | None) -> tuple[Chat, list[Turn]]:
        """The chat and its turns `start`..`end`, read in pages of turns: the chat as the first
        page found it, and its turns up to the count it had then."""
        if not is_uuid(chat_id):
            raise ChatNotFound(chat_id)
        await self._replay.send_queued_first()
        start = max(start, 1)  # seqs start at 1: counting from there finds every page

        async def page(first: int, last: int) -> tuple[Chat, list[Turn]]:
            last = min(last, first + TURN_PAGE - 1)
            data = await self._rpc("load_chat", "load a chat", p_chat_id=chat_id, p_from_seq=first, p_to_seq=last)
            return chat_of(data["chat"]), [Turn.model_validate(t) for t in data["turns"]]

        chat, turns = await page(start, start + TURN_PAGE - 1 if end is None else end)
        last = chat.turn_count if end is None else min(end, chat.turn_count)
        while turns and len(turns) % TURN_PAGE == 0 and start + len(turns) <= last:
            turns += (await page(start + len(turns), last))[1]
        return chat, turns

    async def load_memory(
        self, chat_id: str, *, min_importance: float = IMPORTANT, important_limit: int = 30
    ) -> MemorySnapshot:
        if not is_uuid(chat_id):
            raise ChatNotFound(chat_id)
        await self._replay.send_queued_first()
        data = await self._rpc(
            "load_memory",
            "load a chat's memory",
            p_chat_id=chat_id,
            p_min_importance=min_importance,
            p_important_limit=important_limit,
        )
        return MemorySnapshot(
            chat=chat_of(data["chat"]),
            tail=[Turn.model_validate(t) for t in data["turns"]],
            pins=[Pin.model_validate(p) for p in data["pins"]],
            metas=[summary_of(r) for r in data["metas"]],
            facts=[facts_of(r) for r in data["facts"]],
            important=[Turn.model_validate(t) for t in data["important"]],
        )

    async def find_chats(self, ref: str) -> list[Chat]:
        await self._replay.send_queued_first()
        rows = await self._rpc("find_chats", "find chats", p_ref=ref)
        return [chat_of(r) for r in exact_id_first(rows, ref, lambda r: r["id"])]

    async def list_chats(self, limit: int = 50, offset: int = 0) -> list[Chat]:
        await self._replay.send_queued_first()  # a rename, delete or new chat of this device's is seen
        rows = await self._select(
            "list chats",
            lambda c: c.table("chats").select(_CHAT_COLUMNS).order("last_activity_at", desc=True).order("id"),
            offset=offset,
            limit=limit,
        )
        return [chat_of(r) for r in rows]

    # -- turns -----------------------------------------------------------------------------

    async def load_history(self, chat_id: str) -> ChatHistory:
        chat, turns = await self._load(chat_id, 1, None)
        return ChatHistory(chat=chat, full_history=turns)

    async def load_turns(self, chat_id: str, start: int = 1, end: int | None = None) -> list[Turn]:
        return (await self._load(chat_id, start, end))[1]

    # -- compaction ------------------------------------------------------------------------

    async def commit_compaction(self, commit: CompactionCommit) -> Chat | None:
        data = await self._rpc(
            "commit_compaction",
            "commit a compaction",
            p_chat_id=commit.chat_id,
            p_expected_version=commit.expected_version,
            p_summarized_through=commit.summarized_through,
            p_rolling_summary=commit.rolling_summary,
            p_summary_text=commit.summary_text.text,
            p_summary_embedding=vector_value(commit.summary_text.vector),
            p_embedder=commit.summary_text.embedder,
            p_title=storable_title(commit.title, commit.chat_id),
        )
        return chat_of(data) if data else None

    async def set_summary_text(
        self, chat_id: str, summary_text: EmbeddedText, expected_version: int, title: str | None = None
    ) -> bool:
        return bool(
            await self._rpc(
                "set_description",
                "describe a chat",
                p_chat_id=chat_id,
                p_expected_version=expected_version,
                p_summary_text=summary_text.text,
                p_summary_embedding=vector_value(summary_text.vector),
                p_embedder=summary_text.embedder,
                p_title=storable_title(title, chat_id),
            )
        )
