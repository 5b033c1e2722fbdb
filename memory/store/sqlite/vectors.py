"""The embedded store's vectors: which embedder made them, the generation an open index follows,
the word counts of windows, and the texts behind each vector."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Literal

from ...errors import EmbedderMismatch
from ..checks import (
    text_ref,
)
from ..protocol import (
    TextRef,
)
from .rows import LEVEL_OF_KIND

if TYPE_CHECKING:
    from parla.records.embedding import EmbeddedText


def embedder_info_of(db: sqlite3.Connection) -> tuple[str, int] | None:
    rows = dict(db.execute("SELECT key, value FROM meta WHERE key IN ('embedder', 'embedding_dim')").fetchall())
    if "embedder" not in rows:
        return None
    return rows["embedder"], int(rows["embedding_dim"])


def check_embedder(db: sqlite3.Connection, embedded: EmbeddedText) -> None:
    info = embedder_info_of(db)
    if info == (embedded.embedder, embedded.dim):
        return
    if info is None or not vector_count(db):
        set_embedder(db, embedded.embedder, embedded.dim)
        return
    name, dim = info
    raise EmbedderMismatch(
        f"this store's vectors were made by {name} ({dim} dims) but the embedder now is "
        f"{embedded.embedder} ({embedded.dim} dims): run `parla memory reembed` to rebuild them, "
        "or set PARLA_EMBEDDER back"
    )


def set_embedder(db: sqlite3.Connection, name: str, dim: int) -> None:
    db.executemany(
        "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        [("embedder", name), ("embedding_dim", str(dim))],
    )


def bump_generation(db: sqlite3.Connection) -> None:
    db.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'")


def vectors_changed(db: sqlite3.Connection, chat_id: str) -> None:
    """A new generation, and the chat whose vectors it changed, so an open index reloads only that
    chat's rows (a full rebuild only follows `replace_embeddings`)."""
    bump_generation(db)
    db.execute("INSERT OR IGNORE INTO vector_chats (chat_id) VALUES (?)", (chat_id,))
    db.execute(
        "INSERT INTO vector_changes (chat_id, generation) VALUES (?, ?) "
        "ON CONFLICT (chat_id) DO UPDATE SET generation = excluded.generation",
        (chat_id, generation_of(db)),
    )


# The word counts' row for the empty word counts every window (no real word is empty).
ALL_WINDOWS = ""


def count_words(db: sqlite3.Connection, words_json: str, delta: Literal[1, -1]) -> None:
    words = [(ALL_WINDOWS,), *((w,) for w in json.loads(words_json))]
    if delta > 0:
        db.executemany(
            "INSERT INTO window_words (word, windows) VALUES (?, 1) ON CONFLICT (word) DO UPDATE SET windows = windows + 1",
            words,
        )
    else:  # an upsert would check the new row (a count of -1) before seeing the word is there
        db.executemany("UPDATE window_words SET windows = windows - 1 WHERE word = ?", words)


def generation_of(db: sqlite3.Connection) -> int:
    return int(db.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()[0])


VECTORS = (
    "SELECT id AS chat_id, 'summary_text' AS kind, 0 AS s, 0 AS e, summary_embedding AS v FROM chats "
    "WHERE summary_embedding IS NOT NULL AND {chats} "
    "UNION ALL SELECT chat_id, CASE level WHEN 0 THEN 'chunk' ELSE 'meta' END, start_seq, end_seq, "
    "embedding FROM summaries WHERE {rows} "
    "UNION ALL SELECT chat_id, 'facts', start_seq, end_seq, embedding FROM facts WHERE embedding IS NOT NULL AND {rows} "
    "UNION ALL SELECT chat_id, 'turns', start_seq, end_seq, embedding FROM turn_windows WHERE {rows}"
)


def vector_rows(db: sqlite3.Connection, chat_ids: Sequence[str] | None = None) -> list[tuple[TextRef, bytes]]:
    """Every vector, or those of some chats."""
    return [(text_ref(*row[:4]), row[4]) for row in raw_vector_rows(db, chat_ids)]


def raw_vector_rows(db: sqlite3.Connection, chat_ids: Sequence[str] | None = None) -> list[sqlite3.Row]:
    """(chat id, kind, start, end, vector) rows, for a caller that makes few of them TextRefs."""
    if chat_ids is None:
        return db.execute(VECTORS.format(chats="1", rows="1")).fetchall()
    marks = ",".join("?" * len(chat_ids))
    sql = VECTORS.format(chats=f"id IN ({marks})", rows=f"chat_id IN ({marks})")
    return db.execute(sql, [*chat_ids] * 4).fetchall()


VECTOR_BLOBS = (
    "SELECT id, summary_embedding FROM chats WHERE summary_embedding IS NOT NULL AND {chats} "
    "UNION ALL SELECT chat_id, embedding FROM summaries WHERE {rows} "
    "UNION ALL SELECT chat_id, embedding FROM facts WHERE embedding IS NOT NULL AND {rows} "
    "UNION ALL SELECT chat_id, embedding FROM turn_windows WHERE {rows}"
)


def vector_blobs(db: sqlite3.Connection, chat_ids: Sequence[str] | None = None) -> Iterator[tuple[str, bytes]]:
    """(chat id, vector) of every vector, or of some chats', streamed: what an index needs to
    rank chats, without the texts' references."""
    if chat_ids is None:
        cursor = db.execute(VECTOR_BLOBS.format(chats="1", rows="1"))
    else:
        marks = ",".join("?" * len(chat_ids))
        cursor = db.execute(
            VECTOR_BLOBS.format(chats=f"id IN ({marks})", rows=f"chat_id IN ({marks})"), [*chat_ids] * 4
        )
    while rows := cursor.fetchmany(4096):
        yield from rows


def vector_count(db: sqlite3.Connection) -> int:
    row = db.execute(
        "SELECT (SELECT count(*) FROM chats WHERE summary_embedding IS NOT NULL) "
        "+ (SELECT count(*) FROM summaries) + (SELECT count(*) FROM facts WHERE embedding IS NOT NULL) "
        "+ (SELECT count(*) FROM turn_windows)"
    ).fetchone()
    return int(row[0])


def texts_of(db: sqlite3.Connection, refs: list[TextRef]) -> dict[TextRef, str]:
    """The texts of `refs`: each chat's windows (most of a search's texts) in one query, the rest
    one by one."""
    by_chat: dict[str, dict[int, TextRef]] = {}
    for ref in refs:
        if ref.kind == "turns" and ref.range is not None:
            by_chat.setdefault(ref.chat_id, {})[ref.range.start] = ref
    out: dict[TextRef, str] = {}
    for chat_id, starts in by_chat.items():
        rows = db.execute(
            f"SELECT start_seq, text FROM turn_windows WHERE chat_id = ? AND start_seq IN ({','.join('?' * len(starts))})",
            [chat_id, *starts],
        ).fetchall()
        out.update({starts[r[0]]: r[1] for r in rows})
    for ref in refs:
        if ref not in out:
            out[ref] = text_of(db, ref)
    return out


def text_of(db: sqlite3.Connection, ref: TextRef) -> str:
    args: tuple[object, ...]
    if ref.kind == "summary_text":
        sql, args = "SELECT summary_text FROM chats WHERE id = ?", (ref.chat_id,)
    elif ref.kind == "facts":
        assert ref.range is not None
        sql = "SELECT text FROM facts WHERE chat_id = ? AND start_seq = ? AND end_seq = ?"
        args = (ref.chat_id, ref.range.start, ref.range.end)
    elif ref.kind == "turns":
        assert ref.range is not None
        sql = "SELECT text FROM turn_windows WHERE chat_id = ? AND start_seq = ?"
        args = (ref.chat_id, ref.range.start)
    else:
        assert ref.range is not None
        sql = "SELECT text FROM summaries WHERE chat_id = ? AND level = ? AND start_seq = ? AND end_seq = ?"
        args = (ref.chat_id, int(LEVEL_OF_KIND[ref.kind]), ref.range.start, ref.range.end)
    row = db.execute(sql, args).fetchone()
    return row[0] if row else ""
