"""The Supabase store's rows and RPC parameters: how chats, turns, summaries, facts and vectors
travel to and from the project's Postgres functions and tables.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any, TypeVar, cast

import numpy as np

from parla.records.chat import Chat
from parla.records.embedding import EmbeddedText
from parla.records.facts import FactBlock, stored_fact_lines
from parla.records.summary import Summary, SummaryLevel
from parla.records.turn import MessageRange, Turn

from ..protocol import (
    AppendResult,
    TextKind,
    facts_text,
)

T = TypeVar("T")


def parse_vector(value: str | Sequence[float]) -> np.ndarray:
    """A pgvector value as PostgREST returns it (the string "[0.1,0.2]") or as a list."""
    if isinstance(value, str):
        value = json.loads(value)
    return np.asarray(value, dtype=np.float32)


def vector_value(vector: np.ndarray) -> list[float]:
    return [float(x) for x in np.asarray(vector, dtype=np.float32)]


def turn_payload(turn: Turn) -> dict[str, Any]:
    """A turn as the append function reads it (with its importance: `ScoredWrites` scored it)."""
    return turn.model_dump(mode="json", exclude={"seq"})


def chunks(items: Sequence[T], size: int) -> list[Sequence[T]]:
    """`items` in consecutive pieces of `size`; one empty piece when there are none (the write
    still happens: it creates the chat, or clears what was staged)."""
    return [items[i : i + size] for i in range(0, len(items), size)] or [items[:0]]


def page_key(key: str | None, number: int) -> str | None:
    """The write key of page `number` of an outbox entry's turns (none for an entry queued
    without a key): the entry's key for the first, one derived from it for the others."""
    if key is None or number == 0:
        return key
    return str(uuid.uuid5(uuid.UUID(key), str(number)))


def chat_of(row: dict[str, Any]) -> Chat:
    return Chat.model_validate(row)


def append_result(pages: Sequence[dict[str, Any]], turns: Sequence[Turn]) -> AppendResult:
    """The answers of one write's pages as one result: the chat after the last page."""
    seqs = {t["id"]: t["seq"] for data in pages for t in data["turns"]}
    return AppendResult(
        chat=chat_of(pages[-1]["chat"]),
        turns=[t.model_copy(update={"seq": seqs[t.id]}) for t in turns],
        added=sum(int(data["added"]) for data in pages),
    )


def is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


def summary_of(row: dict[str, Any]) -> Summary:
    return Summary(
        chat_id=row["chat_id"],
        level=SummaryLevel(row["level"]),
        range=MessageRange(start=row["start_seq"], end=row["end_seq"]),
        text=row["summary"],
        updated_at=datetime.fromisoformat(row["updated_at"]),
        importance=row.get("importance"),
    )


def fact_params(chat_id: str, rng: MessageRange, lines: list[str], embedded: EmbeddedText | None) -> dict[str, Any]:
    return {
        "p_chat_id": chat_id,
        "p_start_seq": rng.start,
        "p_end_seq": rng.end,
        "p_facts": facts_text(lines, embedded),
        "p_embedding": vector_value(embedded.vector) if embedded else None,
        "p_embedder": embedded.embedder if embedded else None,
    }


def facts_of(row: dict[str, Any]) -> FactBlock:
    return FactBlock(
        chat_id=row["chat_id"],
        range=MessageRange(start=row["start_seq"], end=row["end_seq"]),
        lines=stored_fact_lines(row["facts"]),
        forgotten=stored_fact_lines(row.get("forgotten", "")),
        updated_at=datetime.fromisoformat(row["updated_at"]),
    )


# The SQL functions name the chat's summary text's kind 'summary'; the domain names it as the column.
_KIND_IN_SQL = {"summary_text": "summary"}
_KIND_OF_SQL = {v: k for k, v in _KIND_IN_SQL.items()}


def kind_in_sql(kind: TextKind) -> str:
    return _KIND_IN_SQL.get(kind, kind)


def kind_of_sql(kind: str) -> TextKind:
    return cast(TextKind, _KIND_OF_SQL.get(kind, kind))
