"""The embedded store's search among one chat's embedded texts (recall inside a chat)."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

from ...errors import EmbedderMismatch
from ..protocol import TextMatch
from .connection import SQLiteConnection
from .rows import vector_matrix
from .vectors import embedder_info_of, texts_of, vector_rows

if TYPE_CHECKING:
    from parla.records.embedding import EmbeddedText


class SQLiteChatTexts(SQLiteConnection):
    async def search_chat(self, query: EmbeddedText, chat_id: str, match_count: int) -> list[TextMatch]:
        def read(db: sqlite3.Connection) -> list[TextMatch]:
            info = embedder_info_of(db)
            if info is None or match_count <= 0:
                return []
            if info != (query.embedder, query.dim):
                raise EmbedderMismatch(
                    f"the query was embedded by {query.embedder} ({query.dim} dims) but this store's vectors by "
                    f"{info[0]} ({info[1]} dims): run `parla memory reembed` or set PARLA_EMBEDDER back"
                )
            # one chat's rows are few (hundreds for a long chat): read and compared directly
            rows = vector_rows(db, [chat_id])
            if not rows:
                return []
            sims = vector_matrix([blob for _, blob in rows]) @ query.vector.astype("<f4")
            order = (-sims).argsort(kind="stable")[:match_count]
            refs = [rows[int(i)][0] for i in order]
            bodies = texts_of(db, refs)
            return [TextMatch(ref, bodies[ref], float(sims[i])) for ref, i in zip(refs, order, strict=True)]

        return await self._read(read)
