"""The SQL of the Supabase store (supabase/migrations, the Supabase CLI layout) and applying it.

Applied migrations are recorded in `supabase_migrations.schema_migrations`, the table the
Supabase CLI uses, so `parla db migrate` and `supabase db push` agree on what is applied.
"""

from __future__ import annotations

import sysconfig
from dataclasses import dataclass
from pathlib import Path

import psycopg

from parla.memory.errors import StoreError

# what public.parla_schema_version() returns once every shipped migration is applied
SCHEMA_VERSION = 11

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


def apply_migrations(db_url: str) -> list[Migration]:
    """Apply the migrations not yet recorded, each in its own transaction; returns those applied."""
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
            try:
                with conn.transaction():
                    conn.execute(migration.sql)
                    conn.execute(
                        "INSERT INTO supabase_migrations.schema_migrations (version, statements, name) "
                        "VALUES (%s, %s, %s)",
                        (migration.version, [migration.sql], migration.name),
                    )
            except psycopg.Error as e:
                raise StoreError(f"migration {migration.path.name} failed and was rolled back: {e}".strip()) from e
            applied.append(migration)
    return applied
