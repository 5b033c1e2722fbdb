"""The embedded store's summaries, facts and pins."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING

from parla.records.facts import FactBlock, format_fact_lines
from parla.records.pins import Pin
from parla.records.summary import Summary, SummaryLevel
from parla.records.turn import MessageRange, utcnow

from ...errors import StoreError
from ..checks import (
    pin_not_found,
)
from ..protocol import (
    facts_text,
)
from .connection import SQLiteConnection
from .rows import (
    INSERT_PIN,
    fact_block_of_row,
    facts_of,
    get_chat_row,
    iso,
    pin_of_row,
    pin_params,
    pins_of,
    summaries_of,
    vector_blob,
)
from .vectors import check_embedder, vectors_changed

if TYPE_CHECKING:
    from parla.records.embedding import EmbeddedText


class SQLiteMemory(SQLiteConnection):
    # -- summaries and facts ---------------------------------------------------------------

    async def upsert_summary(
        self,
        chat_id: str,
        level: SummaryLevel,
        rng: MessageRange,
        embedded: EmbeddedText,
        importance: float | None = None,
    ) -> Summary:
        now = utcnow()

        def write(db: sqlite3.Connection) -> None:
            get_chat_row(db, chat_id)
            check_embedder(db, embedded)
            db.execute(
                "INSERT INTO summaries (chat_id, level, start_seq, end_seq, text, embedding, embedder, updated_at, "
                "importance) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (chat_id, level, start_seq, end_seq) "
                "DO UPDATE SET text = excluded.text, embedding = excluded.embedding, embedder = excluded.embedder, "
                "updated_at = excluded.updated_at, importance = excluded.importance",
                (
                    chat_id,
                    int(level),
                    rng.start,
                    rng.end,
                    embedded.text,
                    vector_blob(embedded.vector),
                    embedded.embedder,
                    iso(now),
                    importance,
                ),
            )
            vectors_changed(db, chat_id)

        await self._write(write)
        return Summary(
            chat_id=chat_id, level=level, range=rng, text=embedded.text, updated_at=now, importance=importance
        )

    async def list_summaries(self, chat_id: str, level: SummaryLevel | None = None) -> list[Summary]:
        return await self._read(lambda db: summaries_of(db, chat_id, level))

    async def upsert_facts(
        self, chat_id: str, rng: MessageRange, lines: list[str], embedded: EmbeddedText | None
    ) -> FactBlock:
        text = facts_text(lines, embedded)
        now = utcnow()

        def write(db: sqlite3.Connection) -> None:
            get_chat_row(db, chat_id)
            if embedded is not None:
                check_embedder(db, embedded)
            db.execute(
                "INSERT INTO facts (chat_id, start_seq, end_seq, text, embedding, embedder, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (chat_id, start_seq, end_seq) DO UPDATE SET "
                "text = excluded.text, embedding = excluded.embedding, embedder = excluded.embedder, "
                "updated_at = excluded.updated_at",
                (
                    chat_id,
                    rng.start,
                    rng.end,
                    text,
                    vector_blob(embedded.vector) if embedded else None,
                    embedded.embedder if embedded else None,
                    iso(now),
                ),
            )
            vectors_changed(db, chat_id)

        await self._write(write)
        return FactBlock(chat_id=chat_id, range=rng, lines=lines, updated_at=now)

    async def list_facts(self, chat_id: str) -> list[FactBlock]:
        return await self._read(lambda db: facts_of(db, chat_id))

    async def set_fact_lines(
        self, chat_id: str, rng: MessageRange, lines: list[str], forgotten: list[str], embedded: EmbeddedText | None
    ) -> FactBlock:
        text = facts_text(lines, embedded)

        def write(db: sqlite3.Connection) -> FactBlock:
            if embedded is not None:
                check_embedder(db, embedded)
            row = db.execute(
                "UPDATE facts SET text = ?, forgotten = ?, embedding = ?, embedder = ?, updated_at = ? "
                "WHERE chat_id = ? AND start_seq = ? AND end_seq = ? "
                "RETURNING chat_id, start_seq, end_seq, text, forgotten, updated_at",
                (
                    text,
                    format_fact_lines(forgotten),
                    vector_blob(embedded.vector) if embedded else None,
                    embedded.embedder if embedded else None,
                    iso(utcnow()),
                    chat_id,
                    rng.start,
                    rng.end,
                ),
            ).fetchone()
            if row is None:
                raise StoreError(f"no facts for messages {rng} of chat {chat_id}")
            vectors_changed(db, chat_id)
            return fact_block_of_row(row)

        return await self._write(write)

    # -- pins ------------------------------------------------------------------------------

    async def add_pin(self, pin: Pin) -> Pin:
        def write(db: sqlite3.Connection) -> Pin:
            get_chat_row(db, pin.chat_id)
            row = db.execute(
                f"{INSERT_PIN} ON CONFLICT (id) DO UPDATE SET content = excluded.content, "
                "importance = excluded.importance, pin_type = excluded.pin_type, "
                "source_turn_id = coalesce(excluded.source_turn_id, source_turn_id), "
                "source_seq = coalesce(excluded.source_seq, source_seq) RETURNING *",
                pin_params(pin),
            ).fetchone()
            return pin_of_row(row)

        return await self._write(write)

    async def add_new_pins(self, pins: Sequence[Pin]) -> list[Pin]:
        def write(db: sqlite3.Connection) -> list[Pin]:
            added = []
            for pin in pins:
                get_chat_row(db, pin.chat_id)
                row = db.execute(f"{INSERT_PIN} ON CONFLICT (id) DO NOTHING RETURNING *", pin_params(pin)).fetchone()
                if row is not None:
                    added.append(pin_of_row(row))
            return added

        return await self._write(write)

    async def list_pins(self, chat_id: str, *, forgotten: bool = False) -> list[Pin]:
        return await self._read(lambda db: pins_of(db, chat_id, forgotten=forgotten))

    async def set_pin_forgotten(self, pin_id: str, forgotten: bool) -> Pin:
        def write(db: sqlite3.Connection) -> Pin:
            row = db.execute(
                "UPDATE pins SET forgotten_at = ? WHERE id = ? RETURNING *",
                (iso(utcnow()) if forgotten else None, pin_id),
            ).fetchone()
            if row is None:
                raise pin_not_found(pin_id)
            return pin_of_row(row)

        return await self._write(write)

    async def delete_pin(self, pin_id: str) -> None:
        def write(db: sqlite3.Connection) -> None:
            if db.execute("DELETE FROM pins WHERE id = ?", (pin_id,)).rowcount == 0:
                raise pin_not_found(pin_id)

        await self._write(write)
