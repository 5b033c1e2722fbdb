"""Rows of the embedded store's tables as domain objects, and the reads and appends every part
of the store shares."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from parla.records.chat import Chat
from parla.records.facts import FactBlock, stored_fact_lines
from parla.records.pins import Pin
from parla.records.summary import Summary, SummaryLevel
from parla.records.turn import MessageRange, Part, TokenUsage, Turn, WebSource, utcnow

from ...errors import ChatNotFound, TurnConflict
from ...language.importance import turn_importance
from ..checks import (
    check_unique_turn_ids,
)

if TYPE_CHECKING:
    import numpy as np

KIND_OF_LEVEL = {SummaryLevel.CHUNK: "chunk", SummaryLevel.META: "meta"}
LEVEL_OF_KIND = {v: k for k, v in KIND_OF_LEVEL.items()}


def iso(value: datetime) -> str:
    return value.astimezone(UTC).isoformat(timespec="microseconds")


def parse_ts(value: str) -> datetime:
    return datetime.fromisoformat(value)


# Vectors are kept at half precision: half the bytes of float32 (the largest part of a heavy
# history's file), and the chats a search ranks first agree with float32's (0.999 top-10 agreement,
# bench.scale). Little-endian whatever the machine, so a file can move between machines.
# numpy is imported only by the functions that decode vectors: reading chats and turns (`parla
# chats`, `show`, `stats`) does not load it (tests/daemon/test_cli_startup.py).
VECTOR_DTYPE = "<f2"
VECTOR_BYTES = int(VECTOR_DTYPE[2:])  # a dimension


def vector_blob(vector: np.ndarray) -> bytes:
    return vector.astype(VECTOR_DTYPE).tobytes()


def vector_matrix(blobs: Sequence[bytes]) -> np.ndarray:
    """Stored vectors (vector_blob's) as the rows of a float32 matrix."""
    import numpy as np

    return np.frombuffer(b"".join(blobs), dtype=VECTOR_DTYPE).reshape(len(blobs), -1).astype(np.float32)


def half_vector(blob: bytes | None) -> bytes | None:
    """A float32 vector of an older file at half precision (its migration)."""
    import numpy as np

    return None if blob is None else vector_blob(np.frombuffer(blob, dtype="<f4"))


# A generated title (two parameters, both the new title or NULL) replaces no title or an earlier
# generated one, never a title the user gave; the right-hand sides see the row before the update.
GENERATED_TITLE = (
    "title = CASE WHEN title IS NULL OR title_generated THEN coalesce(?, title) ELSE title END, "
    "title_generated = CASE WHEN title IS NULL THEN ? IS NOT NULL ELSE title_generated END"
)


def chat_of_row(row: sqlite3.Row) -> Chat:
    return Chat(
        id=row["id"],
        title=row["title"],
        title_generated=bool(row["title_generated"]),
        created_at=parse_ts(row["created_at"]),
        last_activity_at=parse_ts(row["last_activity_at"]),
        summary_text=row["summary_text"],
        rolling_summary=row["rolling_summary"],
        summarized_through=row["summarized_through"],
        compaction_version=row["compaction_version"],
        turn_count=row["turn_count"],
    )


def turn_of_row(row: sqlite3.Row) -> Turn:
    return Turn(
        id=row["id"],
        role=row["role"],
        parts=[Part(**p) for p in json.loads(row["parts"])],
        thinking=row["thinking"],
        seq=row["seq"],
        created_at=parse_ts(row["created_at"]),
        interrupted=bool(row["interrupted"]),
        source=row["source"],
        model_variant=row["model_variant"],
        importance=row["importance"],
        usage=TokenUsage.model_validate_json(row["usage"]) if row["usage"] else None,
        sources=[WebSource(**s) for s in json.loads(row["sources"])] if row["sources"] else [],
    )


def stored_turn_importance(role: str, parts: str) -> float:
    """The rules' importance of a turn as the file holds it (for the migration that adds the column)."""
    return turn_importance(Turn.model_validate({"role": role, "parts": json.loads(parts)}))


def get_chat_row(db: sqlite3.Connection, chat_id: str) -> Chat:
    row = db.execute("SELECT * FROM chats WHERE id = ?", (chat_id,)).fetchone()
    if row is None:
        raise ChatNotFound(chat_id)
    return chat_of_row(row)


def append_rows(db: sqlite3.Connection, chat_id: str, turns: Sequence[Turn]) -> tuple[list[Turn], int]:
    """The turns appended (each as given, with its importance: `ScoredWrites` scored them) with
    their sequence numbers, and how many were new."""
    if not turns:
        return [], 0
    check_unique_turn_ids(turns)
    ids = [t.id for t in turns]
    marks = ",".join("?" * len(ids))
    existing = {
        r["id"]: r for r in db.execute(f"SELECT id, chat_id, seq FROM turns WHERE id IN ({marks})", ids).fetchall()
    }
    seq = db.execute("SELECT turn_count FROM chats WHERE id = ?", (chat_id,)).fetchone()["turn_count"]
    stored: list[Turn] = []
    fresh: list[tuple[Any, ...]] = []
    latest: datetime | None = None
    for turn in turns:
        known = existing.get(turn.id)
        if known is not None:
            if known["chat_id"] != chat_id:
                raise TurnConflict(f"turn {turn.id} is already stored in chat {known['chat_id']}")
            stored.append(turn.model_copy(update={"seq": known["seq"]}))
            continue
        seq += 1
        stored.append(turn.model_copy(update={"seq": seq}))
        latest = turn.created_at if latest is None or turn.created_at > latest else latest
        fresh.append(
            (
                turn.id,
                chat_id,
                seq,
                turn.role,
                json.dumps([p.model_dump() for p in turn.parts], ensure_ascii=False),
                turn.thinking,
                iso(turn.created_at),
                int(turn.interrupted),
                turn.source,
                turn.model_variant,
                turn.importance,
                turn.usage.model_dump_json(exclude_none=True) if turn.usage else None,
                json.dumps([s.model_dump() for s in turn.sources], ensure_ascii=False) if turn.sources else None,
            )
        )
    if fresh:
        db.executemany(
            "INSERT INTO turns (id, chat_id, seq, role, parts, thinking, created_at, interrupted, source, "
            "model_variant, importance, usage, sources) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            fresh,
        )
        db.execute(
            "UPDATE chats SET turn_count = ?, last_activity_at = max(last_activity_at, ?) WHERE id = ?",
            (seq, iso(latest or utcnow()), chat_id),
        )
    return stored, len(fresh)


def turns_of(db: sqlite3.Connection, chat_id: str, start: int, end: int | None) -> list[Turn]:
    rows = db.execute(
        "SELECT * FROM turns WHERE chat_id = ? AND seq >= ? AND seq <= ? ORDER BY seq",
        (chat_id, start, end if end is not None else 2**62),
    ).fetchall()
    return [turn_of_row(r) for r in rows]


def summaries_of(db: sqlite3.Connection, chat_id: str, level: SummaryLevel | None) -> list[Summary]:
    rows = db.execute(
        "SELECT chat_id, level, start_seq, end_seq, text, updated_at, importance FROM summaries "
        "WHERE chat_id = ? AND (? IS NULL OR level = ?) ORDER BY level, start_seq",
        (chat_id, None if level is None else int(level), None if level is None else int(level)),
    ).fetchall()
    return [
        Summary(
            chat_id=r["chat_id"],
            level=SummaryLevel(r["level"]),
            range=MessageRange(start=r["start_seq"], end=r["end_seq"]),
            text=r["text"],
            updated_at=parse_ts(r["updated_at"]),
            importance=r["importance"],
        )
        for r in rows
    ]


def facts_of(db: sqlite3.Connection, chat_id: str) -> list[FactBlock]:
    rows = db.execute(
        "SELECT chat_id, start_seq, end_seq, text, forgotten, updated_at FROM facts WHERE chat_id = ? ORDER BY start_seq",
        (chat_id,),
    ).fetchall()
    return [fact_block_of_row(r) for r in rows]


def pins_of(db: sqlite3.Connection, chat_id: str, *, forgotten: bool) -> list[Pin]:
    rows = db.execute(
        "SELECT * FROM pins WHERE chat_id = ? AND (forgotten_at IS NOT NULL) = ? ORDER BY importance DESC, created_at, id",
        (chat_id, forgotten),
    ).fetchall()
    return [pin_of_row(r) for r in rows]


def pin_of_row(r: sqlite3.Row) -> Pin:
    return Pin(
        id=r["id"],
        chat_id=r["chat_id"],
        content=r["content"],
        importance=r["importance"],
        pin_type=r["pin_type"],
        source_turn_id=r["source_turn_id"],
        source_seq=r["source_seq"],
        created_at=parse_ts(r["created_at"]),
        forgotten_at=parse_ts(r["forgotten_at"]) if r["forgotten_at"] else None,
    )


INSERT_PIN = (
    "INSERT INTO pins (id, chat_id, content, importance, pin_type, source_turn_id, source_seq, created_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)


def pin_params(pin: Pin) -> tuple[object, ...]:
    return (
        pin.id,
        pin.chat_id,
        pin.content,
        pin.importance,
        pin.pin_type,
        pin.source_turn_id,
        pin.source_seq,
        iso(pin.created_at),
    )


def fact_block_of_row(r: sqlite3.Row) -> FactBlock:
    return FactBlock(
        chat_id=r["chat_id"],
        range=MessageRange(start=r["start_seq"], end=r["end_seq"]),
        lines=stored_fact_lines(r["text"]),
        forgotten=stored_fact_lines(r["forgotten"]),
        updated_at=parse_ts(r["updated_at"]),
    )
