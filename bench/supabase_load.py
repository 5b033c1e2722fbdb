"""The faster path to a big history on the Supabase peer: `parla import` into a SQLite store (the
same importer, summaries and windows, offline), then its rows copied into the peer's tables as one
user's, with COPY. `parla import` through supabase-py and the PostgREST shim makes about 25
requests a chat and runs at tens of turns a second on the shared test machine, so 5,000 chats
(160,000 turns) would take more than an hour; this copy takes minutes.

What differs from an import through the API, and why it does not change what is measured:
- the vectors are the SQLite store's, kept at half precision there: they are the offline or
  stand-in embedder's vectors rounded to 16 bits, and every search (exact scan or index) on the
  peer compares the same stored vectors;
- chats get the ids the SQLite store gave them (uuids, as the API's);
- pins, the profile and reminders are not copied (no search reads them);
- the indexes other than keys are dropped for the copy and built again after it, and the
  trigger that counts the windows' words is off during the copy and its counts made in one
  statement after: a bulk load's usual steps; the result is the same rows, indexes and counts.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

import numpy as np
import psycopg

from parla.memory.store.sqlite.rows import VECTOR_DTYPE

# SQLite table -> (Postgres table, {SQLite column: Postgres column} where the names differ)
TABLES: dict[str, tuple[str, dict[str, str]]] = {
    "chats": ("chats", {}),
    "turns": ("chat_turns", {}),
    "summaries": ("chat_summaries", {"text": "summary"}),
    "facts": ("chat_facts", {"text": "facts"}),
    "turn_windows": ("chat_windows", {"text": "body"}),
}
VECTORS = {"embedding", "summary_embedding"}
EMBEDDERS = {"embedder", "summary_embedder"}


class Projection(Protocol):
    """Another embedder's vectors made from the stored ones (bench.scale_probe's `Wide`)."""

    name: str
    dim: int

    def project(self, vectors: np.ndarray) -> np.ndarray: ...


def _vector(blob: bytes, projection: Projection | None) -> str:
    vector = np.frombuffer(blob, dtype=VECTOR_DTYPE).astype(np.float32)
    if projection is not None:
        vector = projection.project(vector[None, :])[0]
    return "[" + ",".join(f"{x:.6g}" for x in vector) + "]"


def _value(column: str, value: object, projection: Projection | None) -> object:
    if value is None:
        return None
    if column in EMBEDDERS and projection is not None:
        return projection.name
    if column in VECTORS:
        assert isinstance(value, bytes)
        return _vector(value, projection)
    if column == "words":  # a JSON list in SQLite, text[] on Postgres
        assert isinstance(value, str)
        return json.loads(value)
    return value


def _columns(pg: psycopg.Connection, table: str) -> set[str]:
    rows = pg.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_schema = 'public' AND table_name = %s "
        "AND is_generated = 'NEVER'",
        (table,),
    ).fetchall()
    return {r[0] for r in rows}


def _rows(lite: sqlite3.Connection, table: str, columns: list[str]) -> Iterator[tuple[object, ...]]:
    cursor = lite.execute(f"SELECT {', '.join(columns)} FROM {table}")
    while batch := cursor.fetchmany(2000):
        yield from batch


def copy_store(store: Path, dsn: str, user_id: str, projection: Projection | None = None) -> dict[str, int]:
    """Copy the SQLite store at `store` into the peer at `dsn` (a superuser's), as `user_id`'s
    rows; with `projection`, each vector as that embedder makes it from the stored one. Returns the
    rows copied, by Postgres table."""
    counts: dict[str, int] = {}
    lite = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    with psycopg.connect(dsn) as pg:
        names = [pg_table for pg_table, _ in TABLES.values()]
        indexes = pg.execute(
            "SELECT c.relname, pg_get_indexdef(i.indexrelid) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "WHERE i.indrelid = ANY (%s::regclass[]) "
            "AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid)",
            ([f"public.{n}" for n in names],),
        ).fetchall()
        for name, _ in indexes:
            pg.execute(f'DROP INDEX public."{name}"')
        pg.execute("ALTER TABLE public.chat_windows DISABLE TRIGGER USER")  # the word counts, made after
        for lite_table, (pg_table, renamed) in TABLES.items():
            wanted = _columns(pg, pg_table)
            have = [r[1] for r in lite.execute(f"PRAGMA table_info({lite_table})")]
            columns = [c for c in have if renamed.get(c, c) in wanted]
            target = ", ".join(f'"{renamed.get(c, c)}"' for c in columns)
            n = 0
            with pg.cursor().copy(f"COPY public.{pg_table} (user_id, {target}) FROM STDIN") as copy:
                for row in _rows(lite, lite_table, columns):
                    copy.write_row((user_id, *(_value(c, v, projection) for c, v in zip(columns, row, strict=True))))
                    n += 1
            counts[pg_table] = n
        embedder = lite.execute("SELECT embedder, length(embedding) FROM turn_windows LIMIT 1").fetchone()
        if embedder is not None:
            name, dim = embedder[0], embedder[1] // np.dtype(VECTOR_DTYPE).itemsize
            if projection is not None:
                name, dim = projection.name, projection.dim
            pg.execute(
                "INSERT INTO public.memory_embedders (user_id, embedder, dim) VALUES (%s, %s, %s)", (user_id, name, dim)
            )
        pg.execute(
            "INSERT INTO public.window_words (user_id, word, windows) "
            "SELECT w.user_id, x, count(*) FROM public.chat_windows w, unnest(array_prepend('', w.words)) x "
            "WHERE w.user_id = %s GROUP BY w.user_id, x",
            (user_id,),
        )
        pg.execute("ALTER TABLE public.chat_windows ENABLE TRIGGER USER")
        pg.execute("SET maintenance_work_mem = '512MB'")
        for _, definition in indexes:
            pg.execute(definition)
        pg.commit()
    lite.close()
    with psycopg.connect(dsn, autocommit=True) as pg:
        pg.execute("VACUUM ANALYZE")
    return counts
