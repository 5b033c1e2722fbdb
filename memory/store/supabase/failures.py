"""How the Supabase store reads a failure: supabase-py's, PostgREST's and the network's errors, and
the pages of a gateway in front of the project, as the store's errors (offline and worth another
try, refused for good, or a setup to fix).
"""

from __future__ import annotations

import json

import httpx
from postgrest.exceptions import APIError
from supabase_auth.errors import AuthApiError, AuthError, AuthRetryableError

from ...errors import ChatNotFound, EmbedderMismatch, StoreError, StoreOffline, StoreRefused, TurnConflict

MIGRATE_HINT = (
    "apply supabase/migrations to the project: `parla db migrate` with PARLA_SUPABASE_DB_URL set, "
    "`supabase db push`, or paste the SQL files into the SQL editor"
)


class GatewayError(Exception):
    """An HTTP error whose body is not PostgREST's (no error code): the page of a proxy or gateway
    in front of the project. postgrest-py 2.x raises `APIError` for it either way: from a body
    that is not JSON with the status as the code (or the code a `Proxy-Status` header names) and
    the page as details, but from a JSON object without a code (what an API gateway sends) with
    no code and the status lost. The status is read here instead, where the response still is."""

    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"HTTP {status}: {body[:200]}")
        self.status = status


async def check_gateway(response: httpx.Response) -> None:
    """The response hook of the store's HTTP client: raises `GatewayError` for a REST error page."""
    if response.status_code < 400 or "/rest/v1/" not in response.url.path:
        return
    await response.aread()
    try:
        body = json.loads(response.content)
    except ValueError:
        body = None
    if not (isinstance(body, dict) and isinstance(body.get("code"), str)):
        raise GatewayError(response.status_code, " ".join(response.text.split()))


# Errors after which the same request can succeed: PostgREST cannot reach the database or its
# pool timed out (PGRST000-003); the database rolled back (serialization failure, deadlock, lock
# timeout, completion unknown) or is short of resources, shutting down or cancelled the statement
# (classes 08, 53, 57, 58). Codes and statuses: docs.postgrest.org/en/latest/references/errors.html
_TEMPORARY_CODES = frozenset({"PGRST000", "PGRST001", "PGRST002", "PGRST003", "40001", "40P01", "40003", "55P03"})


_TEMPORARY_CLASSES = frozenset({"08", "53", "57", "58"})


def temporary_status(status: int) -> bool:
    return status in (408, 429) or status >= 500


def supabase_error(e: Exception, doing: str) -> StoreError:
    """A supabase-py / network failure as the store's error, with what to do about it."""
    if isinstance(e, (httpx.TransportError, AuthRetryableError)):
        return StoreOffline(f"Supabase is unreachable while trying to {doing} ({type(e).__name__}: {e})")
    if isinstance(e, GatewayError):
        if temporary_status(e.status):
            return StoreOffline(f"Supabase is busy or unreachable while trying to {doing} ({e})")
        if e.status in (401, 403):
            return StoreError(f"Supabase refused the credentials ({e}): run `parla login` or check the keys")
        return StoreRefused(f"Supabase refused to {doing} ({e})")
    if isinstance(e, AuthApiError) and temporary_status(e.status):
        return StoreOffline(f"Supabase Auth is busy while trying to {doing}: {e.message}")
    if isinstance(e, AuthError):
        return StoreError(f"Supabase refused the session while trying to {doing}: {e.message}; run `parla login`")
    if not isinstance(e, APIError):
        return StoreError(f"Supabase failed to {doing}: {e}")
    code, detail, message = str(e.code or ""), e.details, e.message or ""
    if detail == "chat_not_found":
        return ChatNotFound(message.removeprefix("no chat ").strip())
    if detail == "turn_conflict":
        return TurnConflict(message)
    if detail == "embedder_mismatch":
        return EmbedderMismatch(f"{message}: {e.hint}" if e.hint else message)
    if code in ("PGRST202", "PGRST205", "42883", "42P01"):
        return StoreError(f"the Supabase project lacks Parla's schema ({message}): {MIGRATE_HINT}")
    if code in ("PGRST301", "PGRST302", "PGRST303") or detail == "not_signed_in":
        return StoreError(f"Supabase refused the credentials ({message}): run `parla login` or check the keys")
    if code in _TEMPORARY_CODES or code[:2] in _TEMPORARY_CLASSES:
        return StoreOffline(f"Supabase is busy or unavailable while trying to {doing}: {message or code} ({code})")
    if code == "42501":
        return StoreRefused(f"Supabase denied permission to {doing}: {message}")
    hint = f" ({e.hint})" if e.hint else ""
    return StoreRefused(f"Supabase refused to {doing}: {message}{hint}")
