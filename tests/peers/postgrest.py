"""A PostgREST- and GoTrue-compatible HTTP shim over a real Postgres, for supabase-py in tests.

What it keeps of the real services, with the limits of a hosted Supabase project:
- it connects as `authenticator` (NOINHERIT, statement_timeout 8 s); every request runs in one
  transaction as the JWT's role (`SET LOCAL ROLE`), with the claims in `request.jwt.claims`, so
  row-level security and grants decide exactly as on Supabase;
- the impersonated role's own settings (anon 3 s, authenticated 8 s statement_timeout) apply to
  the request's transaction, as PostgREST does
  (https://postgrest.org/en/v12/references/transactions.html#impersonated-role-settings);
- GET and HEAD run READ ONLY, and so does a POST to a STABLE or IMMUTABLE function
  (https://postgrest.org/en/v12/references/transactions.html#access-mode): a write there fails
  with 25006;
- max-rows 1000 (Supabase's default "Max rows", PostgREST's db-max-rows): a table, view or
  set-returning function answers at most that many rows, whatever `limit` asks, with a
  Content-Range that says which; a function returning a scalar (json) is one row and not cut
  (https://github.com/orgs/supabase/discussions/51623);
- JWTs are HS256-verified with the project secret; a bad token is 401 PGRST301;
- `POST /rest/v1/rpc/<fn>` calls `fn(arg => value, ...)` with only the keys the body has, reading
  the values through `json_to_record` typed with the function's own argument types; a set is a
  JSON array of rows, a scalar the bare value, void is 204;
- table routes (GET/POST/PATCH/DELETE) with `select`, the common filters, `order`, `limit`,
  `offset`, `on_conflict` and `Prefer: return=representation, resolution=merge-duplicates | ignore-duplicates`; the
  filters, `order`, `limit` and `offset` also apply to a set-returning function's rows;
- errors as `{code, message, details, hint}` with PostgREST's status for the SQLSTATE;
- `/auth/v1/token` (password and refresh_token grants, refresh tokens rotate), `/auth/v1/user`,
  `/auth/v1/logout`.

Faults for the outbox tests: `refuse()` closes the listening socket (connection refused) until
`recover()`; `drop = "before" | "after"` closes the connection without an answer before the SQL
runs or after it committed; `faults` answers chosen requests with the temporary errors of a real
project and its gateway (see `Faults`).
"""

from __future__ import annotations

import hashlib
import json
import queue
import random
import re
import secrets
import socket
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal, Self
from urllib.parse import parse_qsl, urlsplit

import jwt
import psycopg
from psycopg import sql

JWT_SECRET = "parla-test-jwt-secret-with-at-least-32-characters"
ROLES = ("anon", "authenticated", "service_role")
AUTHENTICATOR = "authenticator"
MAX_ROWS = 1000


def sign(claims: dict[str, Any], secret: str = JWT_SECRET) -> str:
    return jwt.encode({"iat": int(time.time()), **claims}, secret, algorithm="HS256")


ANON_KEY = sign({"role": "anon", "iss": "supabase"})
SERVICE_KEY = sign({"role": "service_role", "iss": "supabase"})


def password_hash(password: str, salt: str | None = None) -> str:
    salt = salt or secrets.token_hex(8)
    return f"{salt}${hashlib.pbkdf2_hmac('sha256', password.encode(), salt.encode(), 1000).hex()}"


class PgError(Exception):
    def __init__(self, status: int, code: str, message: str, details: str | None = None, hint: str | None = None):
        super().__init__(message)
        self.status, self.body = status, {"code": code, "message": message, "details": details, "hint": hint}


def status_of(sqlstate: str, role: str) -> int:
    """PostgREST's HTTP status for a SQLSTATE."""
    exact = {"23503": 409, "23505": 409, "25006": 405, "P0001": 400, "42883": 404, "42P01": 404}
    if sqlstate in exact:
        return exact[sqlstate]
    if sqlstate == "42501":
        return 401 if role == "anon" else 403
    by_class = {
        "08": 503,
        "09": 500,
        "0L": 403,
        "0P": 403,
        "25": 500,
        "28": 403,
        "2D": 500,
        "38": 500,
        "39": 500,
        "3B": 500,
        "40": 500,
        "53": 503,
        "54": 500,
        "55": 500,
        "57": 500,
        "58": 500,
        "F0": 500,
        "HV": 500,
        "P0": 500,
        "XX": 500,
    }
    return by_class.get(sqlstate[:2], 400)


_OPS = {"eq": "=", "neq": "<>", "gt": ">", "gte": ">=", "lt": "<", "lte": "<=", "like": "LIKE", "ilike": "ILIKE"}
_RESERVED = {"select", "order", "limit", "offset", "on_conflict", "columns"}


@dataclass
class Request:
    method: str
    path: str
    query: list[tuple[str, str]]
    headers: dict[str, str]
    body: Any


@dataclass
class Response:
    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


class PostgrestShim:
    """Serve PostgREST and GoTrue routes on 127.0.0.1 over the database at `dsn`."""

    def __init__(self, dsn: str, secret: str = JWT_SECRET, pool_size: int = 4, max_rows: int = MAX_ROWS) -> None:
        """`dsn` reaches the database as a superuser (GoTrue's tables, the schema cache); API
        requests go through connections as `authenticator`."""
        self.dsn, self.secret, self.max_rows = dsn, secret, max_rows
        self._api_dsn = psycopg.conninfo.make_conninfo(dsn, user=AUTHENTICATOR)
        self._pool: queue.Queue[psycopg.Connection] = queue.Queue()
        for _ in range(pool_size):
            self._pool.put(psycopg.connect(self._api_dsn))
        self._role_settings: dict[str, list[tuple[str, str]]] = {}
        self.drop: Literal["before", "after"] | None = None
        self.faults = Faults()
        self.log: list[tuple[str, str, int]] = []
        self._open: set[socket.socket] = set()
        self._procs: dict[str, list[dict[str, Any]]] = {}
        self._tables: dict[str, bool] = {}
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.port = 0
        self.recover()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # -- lifecycle and faults -----------------------------------------------------------------

    def recover(self) -> None:
        """Listen (again, on the same port) and stop dropping connections."""
        self.drop = None
        if self._server is not None:
            return
        shim = self

        class Handler(_Handler):
            pass

        Handler.shim = shim
        server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        server.daemon_threads = True
        self.port = server.server_address[1]
        self._server = server
        # serve_forever looks for a shutdown every poll_interval (0.5 s by default): each refuse()
        # and each test's teardown waited that long, about two minutes of the suite
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.02}, name="postgrest-shim", daemon=True
        )
        self._thread.start()

    def refuse(self) -> None:
        """Close the listening socket and every open connection: connections are refused until
        `recover()`, as when the network goes away."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        for conn in list(self._open):
            _shutdown(conn)

    def close(self) -> None:
        self.refuse()
        while not self._pool.empty():
            self._pool.get().close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- users --------------------------------------------------------------------------------

    def create_user(self, email: str, password: str = "correct horse") -> str:
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            row = conn.execute(
                "INSERT INTO auth.users (email, encrypted_password) VALUES (%s, %s) RETURNING id",
                (email, password_hash(password)),
            ).fetchone()
        assert row is not None
        return str(row[0])

    def user_token(self, user_id: str, ttl: int = 3600) -> str:
        return sign(
            {"role": "authenticated", "sub": user_id, "aud": "authenticated", "exp": int(time.time()) + ttl},
            self.secret,
        )

    # -- request handling ---------------------------------------------------------------------

    def handle(self, req: Request) -> Response:
        try:
            if req.path.startswith("/auth/v1/"):
                return self._auth(req)
            if req.path.startswith("/rest/v1/"):
                return self._rest(req)
            raise PgError(404, "PGRST000", f"no route {req.path}")
        except PgError as e:
            return Response(e.status, e.body)
        except Exception as e:  # noqa: BLE001 - a shim bug answers 500 like a server would, not a hang-up
            return Response(500, {"code": "XX000", "message": f"shim error: {e!r}", "details": None, "hint": None})

    def _claims(self, req: Request) -> dict[str, Any]:
        header = req.headers.get("authorization", "")
        if not header:
            return {"role": "anon"}
        token = header.removeprefix("Bearer ").strip()
        try:
            claims = jwt.decode(token, self.secret, algorithms=["HS256"], options={"verify_aud": False})
        except jwt.ExpiredSignatureError:
            raise PgError(401, "PGRST303", "JWT expired") from None
        except jwt.PyJWTError as e:
            raise PgError(401, "PGRST301", f"JWSError: {e}") from None
        if claims.get("role") not in ROLES:
            raise PgError(401, "PGRST301", f"role {claims.get('role')!r} is not allowed")
        return claims

    def _run(
        self, claims: dict[str, Any] | None, query: sql.Composable | str, params: Any = (), *, read_only: bool = False
    ) -> Any:
        """One transaction as the claims' role (None: as the superuser, for GoTrue and the schema
        cache); returns the first column of the first row."""
        role = (claims or {}).get("role", "anon")
        settings = self._settings_of(role) if claims is not None else []
        conn = self._pool.get() if claims is not None else psycopg.connect(self.dsn)
        try:
            # As PostgREST does (its transaction-scoped settings,
            # https://postgrest.org/en/v12/references/transactions.html): the role, the claims and
            # the role's settings in one set_config statement (set_config('role', ...) is SET
            # LOCAL ROLE): one round trip, not one each.
            with conn.transaction():
                if claims is not None:
                    pairs = [("role", role), ("request.jwt.claims", json.dumps(claims)), *settings]
                    if read_only:  # turning read-only on is allowed at any point of a transaction
                        pairs.append(("transaction_read_only", "on"))
                    conn.execute(
                        sql.SQL("SELECT {}").format(
                            sql.SQL(", ").join(sql.SQL("set_config(%s, %s, true)") for _ in pairs)
                        ),
                        [x for pair in pairs for x in pair],
                    )
                elif read_only:
                    conn.execute("SET TRANSACTION READ ONLY")
                cur = conn.execute(query, params)
                row = cur.fetchone() if cur.description else None
            return row[0] if row else None
        except psycopg.Error as e:
            diag = e.diag
            state = diag.sqlstate or "XX000"
            raise PgError(
                status_of(state, role), state, diag.message_primary or str(e), diag.message_detail, diag.message_hint
            ) from None
        finally:
            if claims is None:
                conn.close()
            else:
                if conn.closed:
                    conn = psycopg.connect(self._api_dsn)
                self._pool.put(conn)

    def _settings_of(self, role: str) -> list[tuple[str, str]]:
        """The role's `ALTER ROLE ... SET` settings (read once, like PostgREST's config cache)."""
        if role not in self._role_settings:
            rows = self._run(
                None,
                "SELECT coalesce(json_agg(json_build_array(split_part(s, '=', 1), substr(s, strpos(s, '=') + 1)) "
                "ORDER BY d.setdatabase), '[]') FROM pg_db_role_setting d, "
                "unnest(d.setconfig) s WHERE d.setrole = to_regrole(%s) "
                "AND d.setdatabase IN (0, (SELECT oid FROM pg_database WHERE datname = current_database()))",
                (role,),
            )  # ordered so that a per-database setting wins over the role's general one
            self._role_settings[role] = [(name, value) for name, value in rows]
        return self._role_settings[role]

    # -- /rest/v1 -----------------------------------------------------------------------------

    def _rest(self, req: Request) -> Response:
        claims = self._claims(req)
        name = req.path.removeprefix("/rest/v1/")
        if name.startswith("rpc/"):
            if req.method != "POST":
                raise PgError(405, "PGRST117", f"unsupported HTTP method {req.method} for rpc")
            return self._rpc(claims, name.removeprefix("rpc/"), req.body or {}, req.query)
        return self._table(claims, name, req)

    def _rpc(
        self, claims: dict[str, Any], fn: str, args: dict[str, Any], query: list[tuple[str, str]] = ()
    ) -> Response:
        if not isinstance(args, dict):
            raise PgError(400, "PGRST102", "the RPC body must be a JSON object of named arguments")
        signature = self._function(fn, set(args))
        if signature is None:
            listed = ", ".join(sorted(args))
            raise PgError(
                404,
                "PGRST202",
                f"Could not find the function public.{fn}({listed}) in the schema cache",
                None,
                "Apply the migrations in supabase/migrations",
            )
        arg_types, returns_set, returns_void, read_only = signature
        record = (
            sql.SQL(", ").join(sql.SQL("{} {}").format(sql.Identifier(a), sql.SQL(arg_types[a])) for a in args)
            if args
            else sql.SQL("_unused int")  # json_to_record needs one column
        )
        call = sql.SQL("public.{}({})").format(
            sql.Identifier(fn),
            sql.SQL(", ").join(sql.SQL("{} => r.{}").format(sql.Identifier(a), sql.Identifier(a)) for a in args),
        )
        if returns_set:
            where, params = self._filters(query)
            page, offset = self._page(query)
            rows = sql.SQL("SELECT f.* FROM json_to_record(%s::json) AS r({}) CROSS JOIN LATERAL {} f {} {} {}").format(
                record, call, where, self._order(query), page
            )
            result = self._run(
                claims,
                sql.SQL("SELECT coalesce(json_agg(f), '[]') FROM ({}) f").format(rows),
                (json.dumps(args), *params),
                read_only=read_only,
            )
            return Response(200, result, {"Content-Range": _content_range(offset, len(result))})
        query_sql = sql.SQL("SELECT to_json({}) FROM json_to_record(%s::json) AS r({})").format(call, record)
        result = self._run(claims, query_sql, (json.dumps(args),), read_only=read_only)
        if returns_void:
            return Response(204)
        return Response(200, result)

    def _function(self, fn: str, given: set[str]) -> tuple[dict[str, str], bool, bool, bool] | None:
        """The overload of public.fn whose IN arguments cover `given` and whose others have defaults:
        its argument types, whether it returns a set, void, and whether it runs READ ONLY."""
        if fn not in self._procs:  # a schema cache, as PostgREST keeps
            self._procs[fn] = self._run(
                None,
                "SELECT coalesce(json_agg(json_build_object('names', p.proargnames, 'modes', p.proargmodes, "
                "'types', (SELECT coalesce(array_agg(format_type(t, NULL) ORDER BY i), '{}') "
                "FROM unnest(coalesce(p.proallargtypes, p.proargtypes::oid[])) WITH ORDINALITY u(t, i)), "
                "'defaults', p.pronargdefaults, 'nargs', p.pronargs, "
                "'set', p.proretset, 'void', p.prorettype = 'void'::regtype, "
                "'read_only', p.provolatile <> 'v')), '[]') "
                "FROM pg_proc p WHERE p.pronamespace = 'public'::regnamespace AND p.proname = %s",
                (fn,),
            )
        for row in self._procs[fn]:
            names = row["names"] or []
            modes = row["modes"] or ["i"] * len(names)
            ins = [(n, t) for n, m, t in zip(names, modes, row["types"]) if m in ("i", "b", "v")]
            required = {n for n, _ in ins[: row["nargs"] - row["defaults"]]}
            if given <= {n for n, _ in ins} and required <= given:
                return dict(ins), row["set"], row["void"], row["read_only"]
        return None

    def _table(self, claims: dict[str, Any], name: str, req: Request) -> Response:
        if name not in self._tables:
            self._tables[name] = self._run(
                None,
                "SELECT exists (SELECT 1 FROM information_schema.tables WHERE table_schema = 'public' "
                "AND table_name = %s)",
                (name,),
            )
        if not self._tables[name]:
            raise PgError(404, "PGRST205", f"Could not find the table 'public.{name}' in the schema cache")
        table = sql.SQL("public.{}").format(sql.Identifier(name))
        where, params = self._filters(req.query)
        prefer = req.headers.get("prefer", "")
        returning = "return=representation" in prefer
        if req.method == "GET":
            page, offset = self._page(req.query)
            query = sql.SQL("SELECT coalesce(json_agg(t), '[]') FROM (SELECT {} FROM {} {} {} {}) t").format(
                self._select(req.query), table, where, self._order(req.query), page
            )
            rows = self._run(claims, query, params, read_only=True)
            return Response(200, rows, {"Content-Range": _content_range(offset, len(rows))})
        body = req.body if isinstance(req.body, list) else [req.body] if isinstance(req.body, dict) else None
        if req.method in ("POST", "PATCH") and not body:
            raise PgError(400, "PGRST102", "the body must be a JSON object or array of objects")
        if req.method == "POST":
            cols = sorted({k for row in body for k in row})
            idents = sql.SQL(", ").join(map(sql.Identifier, cols))
            conflict = sql.SQL("")
            target = dict(req.query).get("on_conflict")
            keys = sql.SQL(", ").join(map(sql.Identifier, (target or "id").split(",")))
            if "resolution=merge-duplicates" in prefer:
                sets = sql.SQL(", ").join(sql.SQL("{0} = excluded.{0}").format(sql.Identifier(c)) for c in cols)
                conflict = sql.SQL("ON CONFLICT ({}) DO UPDATE SET {}").format(keys, sets)
            elif "resolution=ignore-duplicates" in prefer:
                # the rows already there are left as they are and are not in the answer
                conflict = sql.SQL("ON CONFLICT ({}) DO NOTHING").format(keys)
            query = sql.SQL(
                "WITH w AS (INSERT INTO {t} ({c}) SELECT {c} FROM json_populate_recordset(NULL::{t}, %s::json) {k} "
                "RETURNING *) SELECT coalesce(json_agg(w), '[]') FROM w"
            ).format(t=table, c=idents, k=conflict)
            rows = self._run(claims, query, (json.dumps(body),))
            return Response(201, rows if returning else None)
        if req.method == "PATCH":
            cols = sorted(body[0])
            query = sql.SQL(
                "WITH w AS (UPDATE {t} SET ({c}) = (SELECT {c} FROM json_populate_record(NULL::{t}, %s::json)) {w} "
                "RETURNING *) SELECT coalesce(json_agg(w), '[]') FROM w"
            ).format(t=table, c=sql.SQL(", ").join(map(sql.Identifier, cols)), w=where)
            rows = self._run(claims, query, (json.dumps(body[0]), *params))
            return Response(200 if returning else 204, rows if returning else None)
        if req.method == "DELETE":
            query = sql.SQL(
                "WITH w AS (DELETE FROM {} {} RETURNING *) SELECT coalesce(json_agg(w), '[]') FROM w"
            ).format(table, where)
            rows = self._run(claims, query, params)
            return Response(200 if returning else 204, rows if returning else None)
        raise PgError(405, "PGRST117", f"unsupported HTTP method {req.method}")

    @staticmethod
    def _select(query: list[tuple[str, str]]) -> sql.Composable:
        cols = dict(query).get("select", "*")
        if cols.strip() == "*":
            return sql.SQL("*")
        return sql.SQL(", ").join(sql.Identifier(c.strip()) for c in cols.split(","))

    @staticmethod
    def _filters(query: list[tuple[str, str]]) -> tuple[sql.Composable, list[Any]]:
        parts: list[sql.Composable] = []
        params: list[Any] = []
        for key, value in query:
            if key in _RESERVED:
                continue
            negate = value.startswith("not.")  # PostgREST's negation of any operator
            op, _, operand = value.removeprefix("not.").partition(".")
            col = sql.Identifier(key)
            start = len(parts)
            if op in _OPS:
                parts.append(
                    sql.SQL("{}::text {} %s").format(col, sql.SQL(_OPS[op]))
                    if op in ("like", "ilike")
                    else sql.SQL("{} {} %s").format(col, sql.SQL(_OPS[op]))
                )
                params.append(operand.replace("*", "%") if op in ("like", "ilike") else operand)
            elif op == "is" and operand in ("null", "true", "false"):
                parts.append(sql.SQL("{} IS {}").format(col, sql.SQL(operand.upper())))
            elif op == "in" and operand.startswith("(") and operand.endswith(")"):
                items = [i.strip().strip('"') for i in operand[1:-1].split(",") if i.strip()]
                parts.append(sql.SQL("{}::text = ANY(%s)").format(col))
                params.append(items)
            else:
                raise PgError(400, "PGRST100", f'"failed to parse filter ({value})" (line 1, column 1)')
            if negate:
                parts[start] = sql.SQL("NOT ({})").format(parts[start])
        if not parts:
            return sql.SQL(""), params
        return sql.SQL("WHERE ") + sql.SQL(" AND ").join(parts), params

    @staticmethod
    def _order(query: list[tuple[str, str]]) -> sql.Composable:
        spec = dict(query).get("order")
        if not spec:
            return sql.SQL("")
        terms = []
        for term in spec.split(","):
            col, *mods = term.split(".")
            direction = "DESC" if "desc" in mods else "ASC"
            nulls = " NULLS FIRST" if "nullsfirst" in mods else " NULLS LAST" if "nullslast" in mods else ""
            terms.append(sql.SQL("{} {}").format(sql.Identifier(col), sql.SQL(direction + nulls)))
        return sql.SQL("ORDER BY ") + sql.SQL(", ").join(terms)

    def _page(self, query: list[tuple[str, str]]) -> tuple[sql.Composable, int]:
        """LIMIT (never above max-rows) and OFFSET, and the offset."""
        q = dict(query)
        for key in ("limit", "offset"):
            if key in q and not re.fullmatch(r"\d+", q[key]):
                raise PgError(400, "PGRST100", f"{key} must be a non-negative integer")
        limit = min(int(q.get("limit", self.max_rows)), self.max_rows)
        offset = int(q.get("offset", 0))
        return sql.SQL(f"LIMIT {limit} OFFSET {offset}"), offset

    # -- /auth/v1 (GoTrue) --------------------------------------------------------------------

    def _auth(self, req: Request) -> Response:
        route = req.path.removeprefix("/auth/v1/")
        grant = dict(req.query).get("grant_type")
        if route == "token" and grant == "password":
            body = req.body or {}
            row = self._run(
                None,
                "SELECT row_to_json(u) FROM auth.users u WHERE lower(email) = lower(%s)",
                (str(body.get("email", "")),),
            )
            salt = (row or {}).get("encrypted_password", "$").split("$")[0]
            if row is None or password_hash(str(body.get("password", "")), salt) != row["encrypted_password"]:
                return self._auth_error(400, "invalid_credentials", "Invalid login credentials")
            return self._session(row)
        if route == "token" and grant == "refresh_token":
            token = str((req.body or {}).get("refresh_token", ""))
            row = self._run(
                None,
                "WITH r AS (UPDATE auth.refresh_tokens SET revoked = true WHERE token = %s AND NOT revoked "
                "RETURNING user_id) SELECT row_to_json(u) FROM auth.users u JOIN r ON r.user_id = u.id",
                (token,),
            )
            if row is None:
                return self._auth_error(
                    400, "refresh_token_not_found", "Invalid Refresh Token: Refresh Token Not Found"
                )
            return self._session(row)
        if route == "user" and req.method == "GET":
            claims = self._claims(req)
            row = self._run(
                None, "SELECT row_to_json(u) FROM auth.users u WHERE id::text = %s", (str(claims.get("sub", "")),)
            )
            if row is None:
                return self._auth_error(401, "no_authorization", "This endpoint requires a valid Bearer token")
            return Response(200, self._user(row))
        if route == "logout":
            claims = self._claims(req)
            self._run(
                None,
                "UPDATE auth.refresh_tokens SET revoked = true WHERE user_id::text = %s",
                (str(claims.get("sub", "")),),
            )
            return Response(204)
        return self._auth_error(404, "not_found", f"no auth route {route}")

    def _session(self, user: dict[str, Any]) -> Response:
        refresh = secrets.token_urlsafe(24)
        self._run(None, "INSERT INTO auth.refresh_tokens (token, user_id) VALUES (%s, %s)", (refresh, user["id"]))
        ttl = 3600
        return Response(
            200,
            {
                "access_token": self.user_token(user["id"], ttl),
                "token_type": "bearer",
                "expires_in": ttl,
                "expires_at": int(time.time()) + ttl,
                "refresh_token": refresh,
                "user": self._user(user),
            },
        )

    @staticmethod
    def _user(row: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": row["id"],
            "aud": "authenticated",
            "role": "authenticated",
            "email": row["email"],
            "app_metadata": {"provider": "email"},
            "user_metadata": {},
            "created_at": row["created_at"],
        }

    @staticmethod
    def _auth_error(status: int, code: str, message: str) -> Response:
        return Response(status, {"code": status, "error_code": code, "msg": message})


# -- fault injection -------------------------------------------------------------------------
# What a real project answers under load, byte for byte in shape: PostgREST's JSON error for its
# own pool timeout (PGRST003, 504) and for the database's serialization failure, deadlock and
# statement timeout (SQLSTATE class 40 and 57 answer 500); the gateway in front of it answers
# with its own page, HTML or plain text, or a JSON object without a PostgREST code; and a
# connection can drop before the request runs or after it committed (the answer is lost).


@dataclass(frozen=True)
class FaultAnswer:
    status: int
    body: bytes
    content_type: str = "application/json; charset=utf-8"
    headers: dict[str, str] = field(default_factory=dict)


def _postgrest_error(code: str, message: str, details: str | None = None) -> FaultAnswer:
    status = 504 if code == "PGRST003" else status_of(code, "authenticated")
    body = {"code": code, "details": details, "hint": None, "message": message}
    return FaultAnswer(status, json.dumps(body).encode())


def _gateway_page(status: int, reason: str) -> FaultAnswer:
    html = (
        f"<html>\r\n<head><title>{status} {reason}</title></head>\r\n<body>\r\n"
        f"<center><h1>{status} {reason}</h1></center>\r\n<hr><center>cloudflare</center>\r\n</body>\r\n</html>\r\n"
    )
    return FaultAnswer(status, html.encode(), "text/html")


FAULTS: dict[str, FaultAnswer] = {
    "PGRST003": _postgrest_error("PGRST003", "Timed out acquiring connection from connection pool."),
    "40001": _postgrest_error("40001", "could not serialize access due to concurrent update"),
    "40P01": _postgrest_error(
        "40P01",
        "deadlock detected",
        "Process 4242 waits for ShareLock on transaction 7731; blocked by process 4243.",
    ),
    "57014": _postgrest_error("57014", "canceling statement due to statement timeout"),
    "408": _gateway_page(408, "Request Timeout"),
    "429": FaultAnswer(429, b"Too Many Requests", "text/plain", {"Retry-After": "1"}),
    "429-json": FaultAnswer(429, b'{"message":"API rate limit exceeded"}'),
    "502": _gateway_page(502, "Bad Gateway"),
    "502-json": FaultAnswer(502, b'{"message":"An invalid response was received from the upstream server"}'),
    "503": FaultAnswer(
        503,
        b"upstream connect error or disconnect/reset before headers. reset reason: connection failure",
        "text/plain",
    ),
    "504": FaultAnswer(504, b"upstream request timeout", "text/plain"),
    # for good: the gateway's limit on the body size
    "413": _gateway_page(413, "Request Entity Too Large"),
}
FaultKind = str  # a key of FAULTS, or "drop_before" / "drop_after"
ALL_FAULTS: tuple[FaultKind, ...] = (*FAULTS, "drop_before", "drop_after")
TEMPORARY_FAULTS: tuple[FaultKind, ...] = tuple(k for k in ALL_FAULTS if k != "413")


class Faults:
    """Which requests the shim answers with a fault instead of serving them. `next(path, kind, n)`
    answers the next `n` requests whose path starts with `path`; `random(p)` answers each matching
    request with probability `p` with a kind from `kinds`, each kind once in a shuffled round before
    the next round (seeded: a run can be repeated).
    `injected` counts what was answered, by kind; `requests` every request, by path."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queued: list[tuple[str, FaultKind]] = []
        self._random: tuple[str, float, tuple[FaultKind, ...]] | None = None
        self._rng = random.Random(0)
        self._deck: list[FaultKind] = []
        self.injected: Counter[FaultKind] = Counter()
        self.requests: Counter[str] = Counter()  # by path, faulty or not

    def next(self, path: str, kind: FaultKind, times: int = 1) -> None:
        if kind not in ALL_FAULTS:
            raise ValueError(f"unknown fault {kind!r}: one of {ALL_FAULTS}")
        with self._lock:
            self._queued.extend([(path, kind)] * times)

    def random(
        self,
        probability: float,
        kinds: tuple[FaultKind, ...] = TEMPORARY_FAULTS,
        path: str = "/rest/v1/",
        seed: int = 0,
    ) -> None:
        unknown = set(kinds) - set(ALL_FAULTS)
        if unknown:
            raise ValueError(f"unknown faults {sorted(unknown)}")
        with self._lock:
            self._random = (path, probability, kinds)
            self._rng = random.Random(seed)
            self._deck = []

    def clear(self) -> None:
        with self._lock:
            self._queued.clear()
            self._random = None

    def take(self, path: str) -> FaultKind | None:
        with self._lock:
            self.requests[path] += 1
            kind = next((self._queued.pop(i)[1] for i, q in enumerate(self._queued) if path.startswith(q[0])), None)
            if kind is None and self._random is not None:
                prefix, probability, kinds = self._random
                if path.startswith(prefix) and self._rng.random() < probability:
                    if not self._deck:  # every kind comes up, in a shuffled order, before any repeats
                        self._deck = self._rng.sample(kinds, len(kinds))
                    kind = self._deck.pop()
            if kind is not None:
                self.injected[kind] += 1
            return kind


def _content_range(offset: int, count: int) -> str:
    """PostgREST's Content-Range for `count` rows from `offset` (total unknown: no count asked)."""
    return f"{offset}-{offset + count - 1}/*" if count else "*/*"


def _shutdown(conn: socket.socket) -> None:
    try:
        conn.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


class _Handler(BaseHTTPRequestHandler):
    shim: PostgrestShim
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:  # quiet
        pass

    def _serve(self) -> None:
        parts = urlsplit(self.path)
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            self._send(
                Response(400, {"code": "PGRST102", "message": "Empty or invalid json", "details": None, "hint": None})
            )
            return
        fault = self.shim.faults.take(parts.path)
        if self.shim.drop == "before" or fault == "drop_before":
            self._drop()
            return
        if fault is not None and fault != "drop_after":
            self.shim.log.append((self.command, parts.path, FAULTS[fault].status))
            self._send_fault(FAULTS[fault])
            return
        req = Request(
            self.command,
            parts.path,
            parse_qsl(parts.query, keep_blank_values=True),
            {k.lower(): v for k, v in self.headers.items()},
            body,
        )
        resp = self.shim.handle(req)
        self.shim.log.append((self.command, parts.path, resp.status))
        if self.shim.drop == "after" or fault == "drop_after":
            self._drop()
            return
        self._send(resp)

    def setup(self) -> None:
        super().setup()
        # headers and body go out in separate writes: without this, Nagle + delayed ACK add 40 ms
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.shim._open.add(self.connection)

    def finish(self) -> None:
        self.shim._open.discard(self.connection)
        super().finish()

    def _drop(self) -> None:
        self.close_connection = True
        _shutdown(self.connection)

    def _send(self, resp: Response) -> None:
        payload = b"" if resp.body is None and resp.status == 204 else json.dumps(resp.body).encode()
        self.send_response(resp.status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(payload)))
        for k, v in resp.headers.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(payload)

    def _send_fault(self, fault: FaultAnswer) -> None:
        self.send_response(fault.status)
        self.send_header("Content-Type", fault.content_type)
        self.send_header("Content-Length", str(len(fault.body)))
        for k, v in fault.headers.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(fault.body)

    do_GET = do_POST = do_PATCH = do_DELETE = _serve
