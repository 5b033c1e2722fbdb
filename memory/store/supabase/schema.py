"""The SQL of the Supabase store (supabase/migrations, the Supabase CLI layout) and applying it.

Applied migrations are recorded in `supabase_migrations.schema_migrations`, the table the
Supabase CLI uses, so `parla db migrate` and `supabase db push` agree on what is applied.
"""

from __future__ import annotations

import logging
import re
import sysconfig
from dataclasses import dataclass
from pathlib import Path

import psycopg

from ...config import INDEX_CHECK_AGREEMENT, INDEX_CHECK_REBUILDS, INDEX_CHECK_SAMPLE
from ...errors import StoreError

# what public.parla_schema_version() returns once every shipped migration is applied
SCHEMA_VERSION = 20

log = logging.getLogger(__name__)

_SOURCE_DIR = Path(__file__).resolve().parents[3] / "supabase" / "migrations"
_INSTALLED_DIR = Path(sysconfig.get_path("data")) / "share" / "parla" / "supabase" / "migrations"


@dataclass(frozen=True)
class Migration:
    version: str
    name: str
    path: Path

    @property
    def sql(self) -> str:
        return self.path.read_text(encoding="utf-8")

    @property
    def asks_for_index_check(self) -> bool:
        """It builds vector indexes, or brings the check itself (so a project's indexes built
        before the check existed are checked once)."""
        return bool(self.parts()[0]) or "function parla.vector_index_agreement" in self.sql

    def parts(self) -> tuple[list[tuple[str, str]], str]:
        """The statements that cannot run in a transaction (each with the index it creates),
        and the rest of the file."""
        sql = self.sql
        alone = [(m.group(0), m.group("name")) for m in _CONCURRENT.finditer(sql)]
        rest = _CONCURRENT.sub("", sql)
        if re.search(r"\bconcurrently\b", re.sub(r"--[^\n]*", "", rest), re.IGNORECASE):
            raise StoreError(
                f"{self.path.name}: write each concurrent statement as "
                "`create index concurrently if not exists <name> ...;` at the start of a line"
            )
        return alone, rest


# CREATE INDEX CONCURRENTLY cannot run in a transaction; the Supabase CLI (since 2.109) likewise runs
# such statements alone, outside the migration's transaction. `if not exists` makes them repeatable.
_CONCURRENT = re.compile(
    r"^create\s+index\s+concurrently\s+if\s+not\s+exists\s+(?P<name>\w+)\b[^;]*;",
    re.IGNORECASE | re.MULTILINE,
)


def migrations_dir() -> Path:
    """The source tree's folder (editable installs), else the copy a wheel installs."""
    for folder in (_SOURCE_DIR, _INSTALLED_DIR):
        if any(folder.glob("*.sql")):
            return folder
    raise StoreError(f"the Supabase migrations are missing: looked in {_SOURCE_DIR} and {_INSTALLED_DIR}")


def migrations() -> list[Migration]:
    out = []
    for path in sorted(migrations_dir().glob("*.sql")):
        version, _, name = path.stem.partition("_")
        out.append(Migration(version, name, path))
    return out


_LEDGER = """
CREATE SCHEMA IF NOT EXISTS supabase_migrations;
CREATE TABLE IF NOT EXISTS supabase_migrations.schema_migrations (
    version text PRIMARY KEY, statements text[], name text
)
"""


def _build_alone(conn: psycopg.Connection, migration: Migration, statement: str, name: str) -> None:
    """Runs one concurrent index build outside any transaction. A build that failed earlier leaves
    an invalid index of that name, which `if not exists` would keep: it is dropped first."""
    invalid = conn.execute(
        "SELECT i.indexrelid::regclass::text FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
        "WHERE c.relname = %s AND NOT i.indisvalid",
        (name,),
    ).fetchone()
    try:
        if invalid is not None:
            conn.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {invalid[0]}")
        conn.execute(statement)
    except psycopg.Error as e:
        raise StoreError(
            f"migration {migration.path.name} failed building index {name}; the rest of it is not applied "
            f"and indexes it built are kept: run it again: {e}".strip()
        ) from e


@dataclass(frozen=True)
class IndexCheck:
    """What the check of the HNSW indexes' nearest rows asks (the PARLA_SUPABASE_INDEX_CHECK_*
    settings): `sample` stored vectors of each index taken as queries, each index's top-10 agreeing
    with an exact scan at least `agreement` on average, else built again, at most `rebuilds` times."""

    sample: int = INDEX_CHECK_SAMPLE
    agreement: float = INDEX_CHECK_AGREEMENT
    rebuilds: int = INDEX_CHECK_REBUILDS


@dataclass(frozen=True)
class IndexChecked:
    index: str
    agreement: float  # the last check's
    rebuilds: int  # builds again it took

    @property
    def text(self) -> str:
        again = f", after {self.rebuilds} build{'s' if self.rebuilds > 1 else ''} again" if self.rebuilds else ""
        return f"index {self.index}: top-10 agreement with an exact scan {self.agreement:.3f}{again}"


def check_vector_indexes(db_url: str, check: IndexCheck) -> list[IndexChecked]:
    """Checks each HNSW index that has rows against an exact scan (parla.vector_index_agreement)
    and builds one that falls short again without blocking writes (REINDEX CONCURRENTLY: a build
    is random, and another reaches the region this one left out), until it agrees or `rebuilds`
    builds are spent; logged either way."""
    try:
        conn = psycopg.connect(db_url, connect_timeout=10, autocommit=True)
    except psycopg.Error as e:
        raise StoreError(f"cannot connect to PARLA_SUPABASE_DB_URL: {e}".strip()) from e
    with conn:
        try:
            return _check(conn, check)
        except psycopg.Error as e:
            raise StoreError(f"checking the vector indexes failed: {e}".strip()) from e


def _check(conn: psycopg.Connection, check: IndexCheck) -> list[IndexChecked]:
    # a build again that failed or was cut leaves its new index invalid, named <index>_ccnew: kept,
    # every write would still update it
    for (left,) in conn.execute(
        "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
        "JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = 'public' AND NOT i.indisvalid AND c.relname LIKE '%%hnsw%%ccnew%%'"
    ).fetchall():
        log.warning("dropping %s, left invalid by a build again that did not finish", left)
        conn.execute(f'DROP INDEX CONCURRENTLY IF EXISTS public."{left}"')
    names = [
        r[0]
        for r in conn.execute(
            "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "JOIN pg_am a ON a.oid = c.relam JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE a.amname = 'hnsw' AND n.nspname = 'public' AND i.indisvalid ORDER BY c.relname"
        )
    ]
    checked = []
    for name in names:
        rebuilds = 0
        while True:
            row = conn.execute(
                "SELECT parla.vector_index_agreement(%s::regclass, %s, 10)", (f"public.{name}", check.sample)
            ).fetchone()
            agreement = None if row is None else row[0]
            if agreement is None:
                break  # no rows
            if agreement >= check.agreement or rebuilds >= check.rebuilds:
                checked.append(IndexChecked(name, agreement, rebuilds))
                level = logging.INFO if agreement >= check.agreement else logging.ERROR
                log.log(level, "%s%s", checked[-1].text, "" if level == logging.INFO else ": searches may miss chats")
                break
            log.warning("index %s: top-10 agreement with an exact scan %.3f: building it again", name, agreement)
            conn.execute(f'REINDEX INDEX CONCURRENTLY public."{name}"')
            rebuilds += 1
    return checked


def apply_migrations(db_url: str) -> list[Migration]:
    """Apply the migrations not yet recorded, each in its own transaction (its concurrent index
    builds first, each alone); returns those applied."""
    try:
        conn = psycopg.connect(db_url, connect_timeout=10, autocommit=True)
    except psycopg.Error as e:
        raise StoreError(f"cannot connect to PARLA_SUPABASE_DB_URL: {e}".strip()) from e
    applied = []
    with conn:
        conn.execute(_LEDGER)
        done = {r[0] for r in conn.execute("SELECT version FROM supabase_migrations.schema_migrations")}
        for migration in migrations():
            if migration.version in done:
                continue
            alone, rest = migration.parts()
            for statement, name in alone:
                _build_alone(conn, migration, statement, name)
            try:
                with conn.transaction():
                    conn.execute(rest)
                    conn.execute(
                        "INSERT INTO supabase_migrations.schema_migrations (version, statements, name) "
                        "VALUES (%s, %s, %s)",
                        (migration.version, [migration.sql], migration.name),
                    )
            except psycopg.Error as e:
                raise StoreError(f"migration {migration.path.name} failed and was rolled back: {e}".strip()) from e
            applied.append(migration)
    return applied
