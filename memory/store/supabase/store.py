"""The Supabase store: the `ChatStore` protocol over supabase-py, the SQL in supabase/migrations.

Every write that must be atomic is one Postgres function called by RPC (append, compaction
commit, upserts), so no read-modify-write crosses the network; the functions run as the caller
(security invoker), so row-level security confines every row to `auth.uid()`.

Two ways to authenticate:
- a user session: `parla login` signs in once with email and password; the session (with its
  rotating refresh token) is kept in a 0600 file and refreshed before it expires. RLS applies.
- the service-role key with an explicit user id, for single-user setups: the key bypasses RLS, so
  every function and query names the user id itself.

Writes of turns, and the writes the user asks for (`supabase_writes`), go through the local
`Outbox` first, so an outage loses nothing: the write raises `WriteQueued` (it is safe and
queued) and a replay task owned by the store sends
the queue, in order and idempotently, when the server answers again.

A real project answers some requests with a temporary error: its pool timed out (PGRST003), the
database rolled the transaction back (serialization failure 40001, deadlock 40P01, statement
timeout 57014), or the gateway in front of it answered 408/429/5xx with its own page. Those are
`StoreOffline` too: the write is tried again with backoff (`RetryPolicy`), never marked failed.
Only a refusal for good (the chat was deleted elsewhere, bad data, permission) marks an entry
failed, with the server's reason; it stays in the outbox and the entries after it go on.

Beside this module, by concern: `chats` (chats, turns, the commit of a compaction), `memory`
(summaries, facts, pins, the profile), `search` (the search index), `reminders`, `queue` (chats
waiting for summaries), `writes` (the user's writes); under them `calls` (requests and pages),
`rows` (rows and RPC parameters), `failures` (how a failure is classified), `session` (signing
in, the session file) and `replay` (the outbox replay and its retry policy).
"""

from __future__ import annotations

from pathlib import Path
from typing import Self

import httpx
from supabase import AsyncClient, AsyncClientOptions, acreate_client

from parla.records.progress import PendingWrites
from parla.records.stats import MemoryStats

from ...config import SUPABASE_COMMIT_PAGE
from ...errors import ChatNotFound, StoreError, StoreOffline
from ...language.importance import IMPORTANT
from ..outbox import Outbox, OutboxEntry, remote_of
from .chats import SupabaseChats
from .failures import MIGRATE_HINT, check_gateway, supabase_error
from .memory import SupabaseMemory
from .queue import SupabaseQueue
from .reminders import REMINDER_WRITES, SupabaseReminders
from .replay import OutboxReplay, RetryPolicy
from .rows import is_uuid
from .schema import SCHEMA_VERSION
from .search import SupabaseSearch
from .session import FileSessionStorage, jwt_role
from .writes import USER_WRITES


async def _signed_in(client: AsyncClient, url: str) -> None:
    """Raises unless a session is saved. One that needs a refresh while Supabase is away is
    refreshed before the first request that reaches it, so Parla starts (from this device's copy)."""
    try:
        session = await client.auth.get_session()
    except Exception as e:
        if isinstance(supabase_error(e, "refresh the session"), StoreOffline):
            return
        raise
    if session is None:
        raise StoreError(f"not signed in to Supabase at {url}: run `parla login`")


class SupabaseChatStore(SupabaseChats, SupabaseMemory, SupabaseSearch, SupabaseReminders, SupabaseQueue):
    """`ChatStore` on a Supabase project. Open with `SupabaseChatStore.connect(...)` and use as
    `async with store:`; the context owns the outbox replay task."""

    def __init__(
        self,
        client: AsyncClient,
        outbox: Outbox,
        http: httpx.AsyncClient,
        *,
        user_id: str | None = None,
        user_session: bool = False,
        retry: RetryPolicy = RetryPolicy(),
        commit_page: int = SUPABASE_COMMIT_PAGE,
    ) -> None:
        super().__init__(client, http, user_id, user_session)
        self._replay = OutboxReplay(outbox, self._send, retry)
        self.commit_page = commit_page  # a project with a shorter statement timeout needs fewer

    @property
    def outbox(self) -> Outbox:
        return self._replay.outbox

    @property
    def retry(self) -> RetryPolicy:
        return self._replay.retry

    @retry.setter
    def retry(self, policy: RetryPolicy) -> None:
        self._replay.retry = policy

    @classmethod
    async def connect(
        cls,
        url: str,
        key: str,
        *,
        outbox_path: Path,
        user_id: str | None = None,
        session_file: Path | None = None,
        timeout: float = 10.0,
        retry: RetryPolicy = RetryPolicy(),
        commit_page: int = SUPABASE_COMMIT_PAGE,
    ) -> SupabaseChatStore:
        """A store for `url`: with `user_id`, `key` must be the service-role key; otherwise `key` is
        the project's anon (publishable) key and `session_file` holds the session of `parla login`."""
        if user_id is None and session_file is None:
            raise StoreError("the Supabase store needs a signed-in session (`parla login`) or PARLA_SUPABASE_USER_ID")
        if user_id is not None and jwt_role(key) in ("anon", "authenticated"):
            raise StoreError(
                "PARLA_SUPABASE_USER_ID is only for the service-role key, and PARLA_SUPABASE_KEY is the anon key: "
                "set PARLA_SUPABASE_SERVICE_KEY, or unset the user id and run `parla login`"
            )
        # the store owns it and closes it
        http = httpx.AsyncClient(timeout=timeout, event_hooks={"response": [check_gateway]})
        options = AsyncClientOptions(
            httpx_client=http,
            postgrest_client_retry=False,  # the outbox retries writes; a read fails fast with a clear message
            auto_refresh_token=False,  # refreshed before each call instead: no timer outlives the store
            persist_session=user_id is None,
        )
        if session_file is not None:  # the session `parla login` saved; the service-role key keeps none
            options.storage = FileSessionStorage(session_file)
        try:
            client = await acreate_client(url, key, options)
            if user_id is None:
                await _signed_in(client, url)
        except Exception as e:
            await http.aclose()
            if isinstance(e, StoreError):
                raise
            raise supabase_error(e, "connect") from e
        outbox = Outbox(outbox_path, remote=remote_of(url, user_id))
        return cls(
            client, outbox, http, user_id=user_id, user_session=user_id is None, retry=retry, commit_page=commit_page
        )

    async def user_id(self) -> str:
        """The user whose rows this store reads and writes (ids derived for imports are theirs)."""
        if self._user_id is not None:
            return self._user_id
        session = await self._call("read the session", self._client.auth.get_session)
        if session is None:
            raise StoreError("not signed in to Supabase: run `parla login`")
        return str(session.user.id)

    # -- lifecycle -------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def open(self) -> None:
        await self._replay.__aenter__()

    async def close(self) -> None:
        try:
            await self._replay.__aexit__(None, None, None)
        finally:
            await self._http.aclose()

    # -- outbox ----------------------------------------------------------------------------

    async def flush(self) -> int:
        """Send every queued write in order; returns how many were sent. Raises `StoreOffline`
        when the server is away (the rest stay queued)."""
        return await self._replay.flush()

    async def pending_writes(self) -> PendingWrites:
        return await self._replay.pending_writes()

    async def _send(self, entry: OutboxEntry) -> object:
        """One queued write, sent by the part of the store that made it."""
        if entry.op in USER_WRITES:
            return await self._send_user_write(entry)
        if entry.op in REMINDER_WRITES:
            return await self._send_reminder_write(entry)
        return await self._send_turns(entry)

    # -- the store as a whole --------------------------------------------------------------

    async def stats(self, chat_id: str | None = None) -> MemoryStats:
        if chat_id is not None and not is_uuid(chat_id):
            raise ChatNotFound(chat_id)
        data = await self._rpc("memory_stats", "read memory stats", p_chat_id=chat_id, p_important=IMPORTANT)
        pending = await self._replay.pending_writes()
        outbox = {
            "outbox_depth": pending.waiting,
            "outbox_failed": pending.refused,
            "outbox_set_aside": pending.set_aside,
            "outbox_problem": pending.problem,
        }
        return MemoryStats.model_validate({**data, **outbox})

    async def schema_version(self) -> int:
        """The remote schema's version (`parla db check`); raises with what to apply when absent."""
        version = int(await self._rpc("parla_schema_version", "check the schema", for_user=False))
        if version < SCHEMA_VERSION:
            raise StoreError(f"the Supabase schema is version {version}, Parla needs {SCHEMA_VERSION}: {MIGRATE_HINT}")
        return version
