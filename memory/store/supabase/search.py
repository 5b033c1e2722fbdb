"""The Supabase store's search index: the embedded texts and windows of what was said, the word
counts, the searches over them (by meaning across chats and inside one, by words) and re-embedding.

Each is one Postgres function; the migration that holds its current version:
- `search_chats_semantic`: 20261126053500_parla_near_texts.sql (the HNSW indexes it reads:
  20261126054000_parla_vector_index.sql);
- `search_chat_texts`, `stage_embeddings`, `commit_embeddings`: 20261126054000_parla_vector_index.sql;
- `search_turn_words`: 20261126055500_parla_turn_word_bounds.sql;
- `upsert_windows`: 20261126052500_parla_turn_word_counts.sql;
- `word_counts`, `window_frontier`, `embedded_texts`: 20261123100000_parla_turn_windows.sql.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np

from parla.records.embedding import EmbeddedText

from ...errors import ChatNotFound
from ..checks import check_one_dimension, text_ref, turn_match
from ..protocol import ChatMatch, EmbeddedWindow, StoredText, TextMatch, TextRef, TurnMatch, WordCounts
from .calls import SupabaseCalls
from .rows import chunks, is_uuid, kind_in_sql, kind_of_sql, vector_value

_VECTOR_PAGE = 250  # new vectors per request when re-embedding (768 floats each)


class SupabaseSearch(SupabaseCalls):
    commit_page: int  # embeddings replaced per request (the store's setting)

    async def search(self, query: EmbeddedText, match_count: int, texts_per_chat: int = 1) -> list[ChatMatch]:
        await self._replay.send_queued_first()
        rows = await self._rpc_rows(
            "search_chats_semantic",
            "search chats",
            ("chat_rank", "text_rank"),
            limit=match_count * texts_per_chat,
            query_embedding=vector_value(query.vector),
            match_count=match_count,
            p_embedder=query.embedder,
            p_texts_per_chat=texts_per_chat,
        )
        by_chat: dict[str, list[dict[str, Any]]] = {}
        for r in rows:
            by_chat.setdefault(r["chat_id"], []).append(r)
        return [
            ChatMatch(
                chat_id=chat_id,
                title=texts[0]["title"],
                created_at=datetime.fromisoformat(texts[0]["created_at"]),
                last_activity_at=datetime.fromisoformat(texts[0]["last_activity_at"]),
                texts=tuple(
                    TextMatch(
                        text_ref(chat_id, kind_of_sql(r["matched_kind"]), r["start_seq"], r["end_seq"]),
                        r["matched_text"],
                        float(r["similarity"]),
                    )
                    for r in texts
                ),
            )
            for chat_id, texts in by_chat.items()
        ]

    async def search_chat(self, query: EmbeddedText, chat_id: str, match_count: int) -> list[TextMatch]:
        if not is_uuid(chat_id):
            return []
        rows = await self._rpc(
            "search_chat_texts",
            "search a chat",
            p_chat_id=chat_id,
            query_embedding=vector_value(query.vector),
            match_count=match_count,
            p_embedder=query.embedder,
        )
        return [
            TextMatch(
                text_ref(chat_id, kind_of_sql(r["matched_kind"]), r["start_seq"], r["end_seq"]),
                r["matched_text"],
                float(r["similarity"]),
            )
            for r in rows
        ]

    async def window_frontier(self, chat_id: str, size: int) -> int:
        if not is_uuid(chat_id):
            raise ChatNotFound(chat_id)
        return int(await self._rpc("window_frontier", "read the search index", p_chat_id=chat_id, p_size=size))

    async def window_text(self, chat_id: str, start: int) -> str | None:
        if not is_uuid(chat_id):
            return None
        rows = await self._select(
            "read the search index",
            lambda c: c.table("chat_windows").select("body").eq("chat_id", chat_id).eq("start_seq", start),
            limit=1,
        )
        return str(rows[0]["body"]) if rows else None

    async def upsert_windows(self, chat_id: str, windows: Sequence[EmbeddedWindow]) -> None:
        if not windows:
            return
        payload = [
            {
                "start_seq": w.range.start,
                "end_seq": w.range.end,
                "body": w.embedded.text,
                "words": w.words,
                "embedding": vector_value(w.embedded.vector),
                "embedder": w.embedded.embedder,
            }
            for w in windows
        ]
        await self._rpc("upsert_windows", "index what was said", p_chat_id=chat_id, p_windows=payload)

    async def word_counts(self, words: Sequence[str]) -> WordCounts:
        rows = await self._rpc_rows("word_counts", "read the word counts", ("word",), p_words=list(words))
        counts = {r["word"]: int(r["windows"]) for r in rows}
        return WordCounts(windows=counts.pop("", 0), counts=counts)

    async def search_words(self, words: Sequence[str], match_count: int, chat_id: str | None = None) -> list[TurnMatch]:
        if not words or match_count <= 0:
            return []
        rows = await self._rpc_rows(
            "search_turn_words",
            "search the turns' words",
            ("score.desc", "chat_id", "seq"),
            limit=match_count,
            p_words=list(words),
            match_count=match_count,
            p_chat_id=chat_id,
        )
        return [turn_match(r) for r in rows]

    async def embedder_info(self) -> tuple[str, int] | None:
        stats = await self._rpc("memory_stats", "read the store's embedder")
        return (stats["embedder"], int(stats["embedding_dim"])) if stats["embedder"] else None

    async def embedded_texts(self) -> list[StoredText]:
        rows = await self._rpc_rows(
            "embedded_texts", "read the embedded texts", ("chat_id", "kind", "start_seq", "end_seq")
        )
        return [
            StoredText(
                text_ref(r["chat_id"], kind_of_sql(r["kind"]), r["start_seq"], r["end_seq"]),
                r["body"],
            )
            for r in rows
        ]

    async def replace_embeddings(self, items: Sequence[tuple[TextRef, np.ndarray]], embedder: str) -> None:
        check_one_dimension(items)
        payload = [
            {
                "chat_id": ref.chat_id,
                "kind": kind_in_sql(ref.kind),
                "start_seq": ref.range.start if ref.range else 0,
                "end_seq": ref.range.end if ref.range else 0,
                "embedding": vector_value(vector),
            }
            for ref, vector in items
        ]
        # staged in pages, then written in pages; searches keep to the old vectors until the last
        # page is written, so they never compare vectors of two embedders
        for number, page in enumerate(chunks(payload, _VECTOR_PAGE)):
            await self._rpc(
                "stage_embeddings", "stage the new embeddings", p_items=page, p_embedder=embedder, p_reset=number == 0
            )
        while await self._rpc(
            "commit_embeddings", "replace the embeddings", p_embedder=embedder, p_page=self.commit_page
        ):
            pass
