"""The SQL of the Supabase store (supabase/migrations, the Supabase CLI layout) and applying it.

Applied migrations are recorded in `supabase_migrations.schema_migrations`, the table the
Supabase CLI uses, so `parla db migrate` and `supabase db push` agree on what is applied.
"""

from __future__ import annotations

import re
import sysconfig
from dataclasses import dataclass
from pathlib import Path

import psycopg

from parla.memory.errors import StoreError

# what public.parla_schema_version() returns once every shipped migration is applied
SCHEMA_VERSION = 18

_SOURCE_DIR = Path(__file__).resolve().parents[2] / "supabase" / "migrations"
_INSTALLED_DIR = Path(sysconfig.get_path("data")) / "share" / "parla" / "supabase" / "migrations"


@dataclass(frozen=True)
class Migration:
    version: str
    name: str
    path: Path

    @property
    def sql(self) -> str:
        return self.path.read_text(encoding="utf-8")

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
