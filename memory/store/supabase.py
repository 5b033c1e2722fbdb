"""The Supabase store: the `ChatStore` protocol over supabase-py, the SQL in supabase/migrations.

Every write that must be atomic is one Postgres function called by RPC (append, compaction
commit, upserts), so no read-modify-write crosses the network; the functions run as the caller
(security invoker), so row-level security confines every row to `auth.uid()`.

Two ways to authenticate:
- a user session: `parla login` signs in once with email and password; the session (with its
  rotating refresh token) is kept in a 0600 file and refreshed before it expires. RLS applies.
- the service-role key with an explicit user id, for single-user setups: the key bypasses RLS, so
  every function and query names the user id itself.

Writes of turns go through the local `Outbox` first, so an outage loses nothing: `append_turns`
raises `StoreOffline` (the turns are safe and queued) and a replay task owned by the store sends
the queue, in order and idempotently, when the server answers again.

A real project answers some requests with a temporary error: its pool timed out (PGRST003), the
database rolled the transaction back (serialization failure 40001, deadlock 40P01, statement
timeout 57014), or the gateway in front of it answered 408/429/5xx with its own page. Those are
`StoreOffline` too: the write is tried again with backoff (`RetryPolicy`), never marked failed.
Only a refusal for good (the chat was deleted elsewhere, bad data, permission) marks an entry
failed, with the server's reason; it stays in the outbox and the entries after it go on.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Self, TypeVar

import httpx
import numpy as np
from postgrest.exceptions import APIError
from supabase import AsyncClient, AsyncClientOptions, acreate_client
from supabase_auth.errors import AuthApiError, AuthError, AuthInvalidJwtError, AuthRetryableError
from supabase_auth.helpers import decode_jwt

from memory.chat import Chat, ChatHistory, storable_title
from memory.embedding import EmbeddedText
from memory.errors import ChatNotFound, EmbedderMismatch, StoreError, StoreOffline, StoreRefused, TurnConflict
from memory.facts import FactBlock, format_fact_lines, stored_fact_lines
from memory.pins import Pin
from memory.stats import MemoryStats
from memory.store import AppendResult, ChatMatch, CompactionCommit, MemorySnapshot, StoredText, TextRef, facts_text
from memory.store.outbox import Outbox, OutboxEntry, OutboxOp
from memory.store.supabase_schema import SCHEMA_VERSION
from memory.store.supabase_session import FileSessionStorage
from memory.summary import MessageRange, Summary, SummaryLevel
from memory.turn import Turn, new_id

log = logging.getLogger(__name__)

T = TypeVar("T")

_PIN_COLUMNS = "id,chat_id,content,importance,pin_type,source_turn_id,created_at,forgotten_at"
_CHAT_COLUMNS = "id,title,title_generated,created_at,last_activity_at,summary_text,rolling_summary,summarized_through,compaction_version,turn_count"
# Supabase answers at most "Max rows" rows per request (PostgREST's db-max-rows, 1000 by default;
# more are cut off silently): every read that can return more asks for pages of this size.
_READ_PAGE = 1000
# Turns per write request, and per page of a long history: each request stays small and far
# inside the statement timeout (8 s for signed-in users), whatever the chat's length.
_TURN_PAGE = 500
_VECTOR_PAGE = 250  # new vectors per request when re-embedding (768 floats each)
_MIGRATE_HINT = (
    "apply supabase/migrations to the project: `parla db migrate` with PARLA_SUPABASE_DB_URL set, "
    "`supabase db push`, or paste the SQL files into the SQL editor"
)


@dataclass(frozen=True)
class RetryPolicy:
    """How a write that meets a temporary error is tried again: `attempts` tries in the call itself,
    waiting `delay` seconds before the second and twice as long each time after (with jitter);
    then the write waits in the outbox and the background replay tries again, backing off up to
    `max_delay` seconds between rounds, for as long as it takes."""

    attempts: int = 3
    delay: float = 0.25
    max_delay: float = 30.0

    def backoff(self, delay: float) -> float:
        return min(delay * 2, self.max_delay)


class GatewayError(Exception):
    """An HTTP error whose body is not PostgREST's (no error code): the page of a proxy or gateway
    in front of the project. postgrest-py 2.x raises `APIError` for it either way: from a body
    that is not JSON with the status as the code (or the code a `Proxy-Status` header names) and
    the page as details, but from a JSON object without a code (what an API gateway sends) with
    no code and the status lost. The status is read here instead, where the response still is."""

    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"HTTP {status}: {body[:200]}")
        self.status = status


async def _gateway_check(response: httpx.Response) -> None:
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


def _temporary_status(status: int) -> bool:
    return status in (408, 429) or status >= 500


def parse_vector(value: str | Sequence[float]) -> np.ndarray:
    """A pgvector value as PostgREST returns it (the string "[0.1,0.2]") or as a list."""
    if isinstance(value, str):
        value = json.loads(value)
    return np.asarray(value, dtype=np.float32)


def _vector(vector: np.ndarray) -> list[float]:
    return [float(x) for x in np.asarray(vector, dtype=np.float32)]


def _turn_payload(turn: Turn) -> dict[str, Any]:
    return turn.model_dump(mode="json", exclude={"seq"})


def _jwt_role(key: str) -> str | None:
    """The role claim of a legacy JWT API key, None for other key formats."""
    try:
        return decode_jwt(key)["payload"].get("role")
    except AuthInvalidJwtError:
        return None


def _error(e: Exception, doing: str) -> StoreError:
    """A supabase-py / network failure as the store's error, with what to do about it."""
    if isinstance(e, (httpx.TransportError, AuthRetryableError)):
        return StoreOffline(f"Supabase is unreachable while trying to {doing} ({type(e).__name__}: {e})")
    if isinstance(e, GatewayError):
        if _temporary_status(e.status):
            return StoreOffline(f"Supabase is busy or unreachable while trying to {doing} ({e})")
        if e.status in (401, 403):
            return StoreError(f"Supabase refused the credentials ({e}): run `parla login` or check the keys")
        return StoreRefused(f"Supabase refused to {doing} ({e})")
    if isinstance(e, AuthApiError) and _temporary_status(e.status):
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
        return StoreError(f"the Supabase project lacks Parla's schema ({message}): {_MIGRATE_HINT}")
    if code in ("PGRST301", "PGRST302", "PGRST303") or detail == "not_signed_in":
        return StoreError(f"Supabase refused the credentials ({message}): run `parla login` or check the keys")
    if code in _TEMPORARY_CODES or code[:2] in _TEMPORARY_CLASSES:
        return StoreOffline(f"Supabase is busy or unavailable while trying to {doing}: {message or code} ({code})")
    if code == "42501":
        return StoreRefused(f"Supabase denied permission to {doing}: {message}")
    hint = f" ({e.hint})" if e.hint else ""
    return StoreRefused(f"Supabase refused to {doing}: {message}{hint}")


def _chunks(items: Sequence[T], size: int) -> list[Sequence[T]]:
    """`items` in consecutive pieces of `size`; one empty piece when there are none (the write
    still happens: it creates the chat, or clears what was staged)."""
    return [items[i : i + size] for i in range(0, len(items), size)] or [items[:0]]


def _chat(row: dict[str, Any]) -> Chat:
    return Chat.model_validate(row)


def _append_result(pages: Sequence[dict[str, Any]], turns: Sequence[Turn]) -> AppendResult:
    """The answers of one write's pages as one result: the chat after the last page."""
    seqs = {t["id"]: t["seq"] for data in pages for t in data["turns"]}
    return AppendResult(
        chat=_chat(pages[-1]["chat"]),
        turns=[t.model_copy(update={"seq": seqs[t.id]}) for t in turns],
        added=sum(int(data["added"]) for data in pages),
    )


class SupabaseChatStore:
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
    ) -> None:
        self._client = client
        self._http = http
        self.outbox = outbox
        self._user_id = user_id
        self._user_session = user_session
        self._send_lock = asyncio.Lock()
        self._wake = asyncio.Event()
        self._replayer: asyncio.Task[None] | None = None
        self.retry = retry
        self._queued = True  # until a first flush: a previous run may have left turns queued

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
    ) -> SupabaseChatStore:
        """A store for `url`: with `user_id`, `key` must be the service-role key; otherwise `key` is
        the project's anon (publishable) key and `session_file` holds the session of `parla login`."""
        if user_id is None and session_file is None:
            raise StoreError("the Supabase store needs a signed-in session (`parla login`) or PARLA_SUPABASE_USER_ID")
        if user_id is not None and _jwt_role(key) in ("anon", "authenticated"):
            raise StoreError(
                "PARLA_SUPABASE_USER_ID is only for the service-role key, and PARLA_SUPABASE_KEY is the anon key: "
                "set PARLA_SUPABASE_SERVICE_KEY, or unset the user id and run `parla login`"
            )
        # the store owns it and closes it
        http = httpx.AsyncClient(timeout=timeout, event_hooks={"response": [_gateway_check]})
        options = AsyncClientOptions(
            httpx_client=http,
            postgrest_client_retry=False,  # the outbox retries writes; a read fails fast with a clear message
            auto_refresh_token=False,  # refreshed before each call instead: no timer outlives the store
            persist_session=user_id is None,
            storage=FileSessionStorage(session_file) if session_file is not None else None,
        )
        try:
            client = await acreate_client(url, key, options)
            if user_id is None and await client.auth.get_session() is None:
                raise StoreError(f"not signed in to Supabase at {url}: run `parla login`")
        except Exception as e:
            await http.aclose()
            if isinstance(e, StoreError):
                raise
            raise _error(e, "connect") from e
        outbox = Outbox(outbox_path, remote=f"{url}#{user_id or 'session'}")
        return cls(client, outbox, http, user_id=user_id, user_session=user_id is None, retry=retry)

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
        await self.outbox.open()
        self._replayer = asyncio.create_task(self._replay_loop(), name="supabase-outbox-replay")
        self._wake.set()  # replay what a previous run left

    async def close(self) -> None:
        if self._replayer is not None:
            self._replayer.cancel()
            try:
                await self._replayer
            except asyncio.CancelledError:
                pass
            self._replayer = None
        try:
            await self.outbox.close()
        finally:
            await self._http.aclose()

    async def _replay_loop(self) -> None:
        """Send the outbox whenever woken, retrying with backoff while the server is away or busy."""
        delay = self.retry.delay
        while True:
            await self._wake.wait()
            self._wake.clear()
            try:
                await self.flush()
            except StoreOffline as e:
                delay = self.retry.backoff(delay)
                log.info("outbox replay: %s; retrying in %.1f s", e, delay)
                await asyncio.sleep(delay)
                self._wake.set()
            except Exception as e:  # an auth failure, or a bug: keep the turns, say so, try again later
                cap = self.retry.max_delay
                log.warning(
                    "outbox replay failed, retrying in %.0f s: %s", cap, e, exc_info=not isinstance(e, StoreError)
                )
                await asyncio.sleep(cap)
                self._wake.set()
            else:
                delay = self.retry.delay

    # -- calls -----------------------------------------------------------------------------

    async def _call(self, doing: str, request: Callable[[], Awaitable[T]]) -> T:
        try:
            if self._user_session:
                await self._client.auth.get_session()  # refreshes an expiring session first
            return await request()
        except StoreError:
            raise
        except Exception as e:
            raise _error(e, doing) from e

    async def _rpc(self, fn: str, doing: str, *, for_user: bool = True, **params: Any) -> Any:
        if for_user and self._user_id is not None:
            params["p_user_id"] = self._user_id
        response = await self._call(doing, lambda: self._client.rpc(fn, params).execute())
        return response.data

    async def _rpc_rows(
        self, fn: str, doing: str, order: Sequence[str], *, limit: int | None = None, **params: Any
    ) -> list[dict[str, Any]]:
        """The rows of a set-returning function, read in pages (ordered by `order`, ".desc" for
        descending) up to `limit`."""
        if self._user_id is not None:
            params["p_user_id"] = self._user_id

        def build(c: AsyncClient) -> Any:
            query = c.rpc(fn, params)
            for column in order:
                name, _, direction = column.partition(".")
                query = query.order(name, desc=direction == "desc")
            return query

        return await self._read_pages(doing, build, 0, limit)

    async def _select(
        self, doing: str, build: Callable[[Any], Any], *, offset: int = 0, limit: int | None = None
    ) -> list[dict[str, Any]]:
        """A table read in pages, from `offset` up to `limit` rows (all by default); `build` must
        order the rows completely so pages neither overlap nor skip."""
        return await self._read_pages(doing, lambda c: self._scoped(build(c)), offset, limit)

    async def _read_pages(
        self, doing: str, build: Callable[[Any], Any], offset: int, limit: int | None
    ) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        while limit is None or len(rows) < limit:
            want = _READ_PAGE if limit is None else min(_READ_PAGE, limit - len(rows))
            start = offset + len(rows)

            async def run(start: int = start, want: int = want) -> Any:
                return await build(self._client).range(start, start + want - 1).execute()

            page = list((await self._call(doing, run)).data or [])
            rows += page
            if len(page) < want:
                break
        return rows

    async def _change(self, doing: str, build: Callable[[Any], Any]) -> list[dict[str, Any]]:
        """An update or delete of table rows; returns the rows it changed."""
        return list((await self._call(doing, lambda: self._scoped(build(self._client)).execute())).data or [])

    def _scoped(self, query: Any) -> Any:
        """With the service-role key, filtered to the user explicitly (RLS is bypassed)."""
        return query.eq("user_id", self._user_id) if self._user_id is not None else query

    # -- outbox ----------------------------------------------------------------------------

    async def flush(self) -> int:
        """Send every queued write in order; returns how many were sent. Raises `StoreOffline`
        when the server is away (the rest stay queued)."""
        async with self._send_lock:
            results = await self._send_pending()
        self._queued = False
        return sum(isinstance(r, AppendResult) for r in results.values())

    async def _send_pending(self) -> dict[int, AppendResult | StoreError]:
        """Results by entry id. An entry refused for good is kept, marked failed with the reason,
        and the ones queued after it go on; a temporary error stops the round (`StoreOffline`)
        with that entry and the rest still queued, in order."""
        results: dict[int, AppendResult | StoreError] = {}
        for entry in await self.outbox.pending():
            try:
                results[entry.id] = await self._send_retrying(entry)
            except (ChatNotFound, TurnConflict, StoreRefused) as e:
                results[entry.id] = e
                await self.outbox.fail(entry.id, str(e))
                log.error(
                    "Supabase refused %d turns of chat %s for good; they are kept in the outbox, marked failed: %s",
                    len(entry.payload["turns"]),
                    entry.chat_id,
                    e,
                    extra={"event": "outbox_refused"},
                )
                continue
            await self.outbox.ack(entry.id)
        return results

    async def _send_retrying(self, entry: OutboxEntry) -> AppendResult:
        """`_send`, tried again after a temporary error: safe, as the calls are idempotent by turn
        id (a try whose answer was lost stored its turns once; the next one stores nothing more)."""
        delay = self.retry.delay
        for attempt in range(1, self.retry.attempts):
            try:
                return await self._send(entry)
            except StoreOffline as e:
                log.info(
                    "Supabase write failed (try %d of %d), again in %.2f s: %s", attempt, self.retry.attempts, delay, e
                )
            await asyncio.sleep(delay * random.uniform(0.5, 1.0))  # jitter: clients that failed together spread
            delay = self.retry.backoff(delay)
        return await self._send(entry)

    async def _send(self, entry: OutboxEntry) -> AppendResult:
        """One queued write, its turns sent in pages: the first with the chat's creation, the
        others appended. Each page is idempotent by turn id, so a retry after a partial send
        stores every turn once."""
        p = entry.payload
        results = []
        for number, page in enumerate(_chunks(p["turns"], _TURN_PAGE)):
            if entry.op == "create_chat" and number == 0:
                data = await self._rpc(
                    "create_chat",
                    "create a chat",
                    p_chat_id=entry.chat_id,
                    p_title=p.get("title"),
                    p_created_at=p.get("created_at"),
                    p_turns=page,
                )
            else:
                data = await self._rpc("append_turns", "append turns", p_chat_id=entry.chat_id, p_turns=page)
            results.append(data)
        return _append_result(results, [Turn.model_validate(t) for t in p["turns"]])

    async def _write_through(self, op: OutboxOp, chat_id: str, payload: dict[str, Any]) -> AppendResult:
        async with self._send_lock:
            entry_id = await self.outbox.put(op, chat_id, payload)
            try:
                results = await self._send_pending()
            except StoreError as e:  # away, busy, or the session or schema is wrong: the turns wait
                self._queued = True
                self._wake.set()
                if not isinstance(e, StoreOffline):
                    raise
                waiting, _ = await self.outbox.depth()
                raise StoreOffline(
                    f"{e}; {waiting} writes wait in the local outbox and will be sent when it is back"
                ) from e
        result = results[entry_id]
        if isinstance(result, StoreError):
            raise result
        return result

    # -- chats -----------------------------------------------------------------------------

    async def create_chat(
        self,
        *,
        chat_id: str | None = None,
        title: str | None = None,
        created_at: datetime | None = None,
        turns: Sequence[Turn] = (),
    ) -> AppendResult:
        chat_id = chat_id or new_id()
        if not _is_uuid(chat_id):
            raise StoreError(f"a Supabase chat id is a UUID, not {chat_id!r}")
        created = created_at or (turns[0].created_at if turns else None)
        payload = {
            "title": storable_title(title, chat_id),
            "created_at": created.isoformat() if created else None,
            "turns": [_turn_payload(t) for t in turns],
        }
        return await self._write_through("create_chat", chat_id, payload)

    async def append_turns(self, chat_id: str, turns: Sequence[Turn]) -> AppendResult:
        if not _is_uuid(chat_id):
            raise ChatNotFound(chat_id)
        if not turns:
            return AppendResult(await self.get_chat(chat_id), [], 0)
        ids = [t.id for t in turns]
        if len(set(ids)) != len(ids):
            raise StoreError("the same turn id appears twice in one append")
        return await self._write_through("append_turns", chat_id, {"turns": [_turn_payload(t) for t in turns]})

    async def get_chat(self, chat_id: str) -> Chat:
        return (await self._load(chat_id, 1, 0))[0]

    async def _load(self, chat_id: str, start: int, end: int | None) -> tuple[Chat, list[Turn]]:
        """The chat and its turns `start`..`end`, read in pages of turns: the chat as the first
        page found it, and its turns up to the count it had then."""
        if not _is_uuid(chat_id):
            raise ChatNotFound(chat_id)
        await self._send_queued_first()
        start = max(start, 1)  # seqs start at 1: counting from there finds every page

        async def page(first: int, last: int) -> tuple[Chat, list[Turn]]:
            last = min(last, first + _TURN_PAGE - 1)
            data = await self._rpc("load_chat", "load a chat", p_chat_id=chat_id, p_from_seq=first, p_to_seq=last)
            return _chat(data["chat"]), [Turn.model_validate(t) for t in data["turns"]]

        chat, turns = await page(start, start + _TURN_PAGE - 1 if end is None else end)
        last = chat.turn_count if end is None else min(end, chat.turn_count)
        while turns and len(turns) % _TURN_PAGE == 0 and start + len(turns) <= last:
            turns += (await page(start + len(turns), last))[1]
        return chat, turns

    async def _send_queued_first(self) -> None:
        """A read sees the turns this machine wrote: queued ones are sent before it."""
        if self._queued:  # back online before the replay task noticed
            try:
                await self.flush()
            except StoreOffline:
                pass  # the read fails with the same cause

    async def load_memory(self, chat_id: str) -> MemorySnapshot:
        if not _is_uuid(chat_id):
            raise ChatNotFound(chat_id)
        await self._send_queued_first()
        data = await self._rpc("load_memory", "load a chat's memory", p_chat_id=chat_id)
        return MemorySnapshot(
            chat=_chat(data["chat"]),
            tail=[Turn.model_validate(t) for t in data["turns"]],
            pins=[Pin.model_validate(p) for p in data["pins"]],
            metas=[_summary(r) for r in data["metas"]],
            facts=[_facts(r) for r in data["facts"]],
        )

    async def find_chats(self, ref: str) -> list[Chat]:
        rows = await self._rpc("find_chats", "find chats", p_ref=ref)
        exact = [r for r in rows if r["id"] == ref.strip().lower()]
        return [_chat(r) for r in (exact or rows)]

    async def list_chats(self, limit: int = 50, offset: int = 0) -> list[Chat]:
        rows = await self._select(
            "list chats",
            lambda c: c.table("chats").select(_CHAT_COLUMNS).order("last_activity_at", desc=True).order("id"),
            offset=offset,
            limit=limit,
        )
        return [_chat(r) for r in rows]

    async def rename_chat(self, chat_id: str, title: str) -> Chat:
        if not title.strip():
            raise StoreError("a chat title cannot be empty")
        if not _is_uuid(chat_id):
            raise ChatNotFound(chat_id)
        return _chat(
            await self._rpc("rename_chat", "rename a chat", p_chat_id=chat_id, p_title=storable_title(title, chat_id))
        )

    async def delete_chat(self, chat_id: str) -> None:
        if not _is_uuid(chat_id):
            raise ChatNotFound(chat_id)
        await self._rpc("delete_chat", "delete a chat", p_chat_id=chat_id)

    # -- turns -----------------------------------------------------------------------------

    async def load_history(self, chat_id: str) -> ChatHistory:
        chat, turns = await self._load(chat_id, 1, None)
        return ChatHistory(chat=chat, full_history=turns)

    async def load_turns(self, chat_id: str, start: int = 1, end: int | None = None) -> list[Turn]:
        return (await self._load(chat_id, start, end))[1]

    # -- compaction ------------------------------------------------------------------------

    async def commit_compaction(self, commit: CompactionCommit) -> Chat | None:
        data = await self._rpc(
            "commit_compaction",
            "commit a compaction",
            p_chat_id=commit.chat_id,
            p_expected_version=commit.expected_version,
            p_summarized_through=commit.summarized_through,
            p_rolling_summary=commit.rolling_summary,
            p_summary_text=commit.description.text,
            p_summary_embedding=_vector(commit.description.vector),
            p_embedder=commit.description.embedder,
            p_title=storable_title(commit.title, commit.chat_id),
        )
        return _chat(data) if data else None

    async def set_description(
        self, chat_id: str, description: EmbeddedText, expected_version: int, title: str | None = None
    ) -> bool:
        return bool(
            await self._rpc(
                "set_description",
                "describe a chat",
                p_chat_id=chat_id,
                p_expected_version=expected_version,
                p_summary_text=description.text,
                p_summary_embedding=_vector(description.vector),
                p_embedder=description.embedder,
                p_title=storable_title(title, chat_id),
            )
        )

    # -- summaries and facts ---------------------------------------------------------------

    async def upsert_summary(
        self, chat_id: str, level: SummaryLevel, rng: MessageRange, embedded: EmbeddedText
    ) -> Summary:
        row = await self._rpc(
            "upsert_summary",
            "store a summary",
            p_chat_id=chat_id,
            p_level=int(level),
            p_start_seq=rng.start,
            p_end_seq=rng.end,
            p_summary=embedded.text,
            p_embedding=_vector(embedded.vector),
            p_embedder=embedded.embedder,
        )
        return _summary(row)

    async def list_summaries(self, chat_id: str, level: SummaryLevel | None = None) -> list[Summary]:
        def build(c: AsyncClient) -> Any:
            q = (
                c.table("chat_summaries")
                .select("chat_id,level,start_seq,end_seq,summary,updated_at")
                .eq("chat_id", chat_id)
            )
            if level is not None:
                q = q.eq("level", int(level))
            return q.order("level").order("start_seq").order("end_seq")

        if not _is_uuid(chat_id):
            return []
        return [_summary(r) for r in await self._select("list summaries", build)]

    async def upsert_facts(
        self, chat_id: str, rng: MessageRange, lines: list[str], embedded: EmbeddedText | None
    ) -> FactBlock:
        return _facts(await self._rpc("upsert_facts", "store facts", **_fact_params(chat_id, rng, lines, embedded)))

    async def list_facts(self, chat_id: str) -> list[FactBlock]:
        if not _is_uuid(chat_id):
            return []
        rows = await self._select(
            "list facts",
            lambda c: (
                c.table("chat_facts")
                .select("chat_id,start_seq,end_seq,facts,forgotten,updated_at")
                .eq("chat_id", chat_id)
                .order("start_seq")
                .order("end_seq")
            ),
        )
        return [_facts(r) for r in rows]

    async def set_fact_lines(
        self, chat_id: str, rng: MessageRange, lines: list[str], forgotten: list[str], embedded: EmbeddedText | None
    ) -> FactBlock:
        params = _fact_params(chat_id, rng, lines, embedded)
        row = await self._rpc("set_fact_lines", "change facts", **params, p_forgotten=format_fact_lines(forgotten))
        return _facts(row)

    # -- pins ------------------------------------------------------------------------------

    async def add_pin(self, pin: Pin) -> Pin:
        if not _is_uuid(pin.chat_id):
            raise ChatNotFound(pin.chat_id)
        row = pin.model_dump(mode="json")
        if self._user_id is not None:
            row["user_id"] = self._user_id
        try:
            await self._call(
                "pin a fact",
                lambda: self._client.table("chat_pins").upsert(row, on_conflict="id").execute(),
            )
        except StoreError as e:
            if isinstance(e.__cause__, APIError) and e.__cause__.code == "23503":
                raise ChatNotFound(pin.chat_id) from e
            raise
        return pin

    async def list_pins(self, chat_id: str, *, forgotten: bool = False) -> list[Pin]:
        if not _is_uuid(chat_id):
            return []
        rows = await self._select(
            "list pins",
            lambda c: (
                c.table("chat_pins")
                .select(_PIN_COLUMNS)
                .eq("chat_id", chat_id)
                .filter("forgotten_at", "not.is" if forgotten else "is", "null")
                .order("importance", desc=True)
                .order("created_at")
                .order("id")
            ),
        )
        return [Pin.model_validate(r) for r in rows]

    async def set_pin_forgotten(self, pin_id: str, forgotten: bool) -> Pin:
        moment = datetime.now(UTC).isoformat() if forgotten else None
        rows = (
            await self._change(
                "forget a pin" if forgotten else "restore a pin",
                lambda c: c.table("chat_pins").update({"forgotten_at": moment}).eq("id", pin_id),
            )
            if _is_uuid(pin_id)
            else []
        )
        if not rows:
            raise StoreError(f"no pin with id {pin_id!r}")
        return Pin.model_validate(rows[0])

    async def delete_pin(self, pin_id: str) -> None:
        rows = (
            await self._change("delete a pin", lambda c: c.table("chat_pins").delete().eq("id", pin_id))
            if _is_uuid(pin_id)
            else []
        )
        if not rows:
            raise StoreError(f"no pin with id {pin_id!r}")

    # -- embeddings and search -------------------------------------------------------------

    async def search(self, query: EmbeddedText, match_count: int) -> list[ChatMatch]:
        rows = await self._rpc_rows(
            "search_chats_semantic",
            "search chats",
            ("similarity.desc", "last_activity_at.desc", "chat_id"),
            limit=match_count,
            query_embedding=_vector(query.vector),
            match_count=match_count,
            p_embedder=query.embedder,
        )
        return [
            ChatMatch(
                chat_id=r["chat_id"],
                title=r["title"],
                similarity=float(r["similarity"]),
                matched=TextRef(
                    r["chat_id"],
                    r["matched_kind"],
                    None if r["matched_kind"] == "summary" else MessageRange(start=r["start_seq"], end=r["end_seq"]),
                ),
                matched_text=r["matched_text"],
                last_activity_at=datetime.fromisoformat(r["last_activity_at"]),
            )
            for r in rows
        ]

    async def embedder_info(self) -> tuple[str, int] | None:
        stats = await self._rpc("memory_stats", "read the store's embedder")
        return (stats["embedder"], int(stats["embedding_dim"])) if stats["embedder"] else None

    async def stats(self) -> MemoryStats:
        data = await self._rpc("memory_stats", "read memory stats")
        waiting, failed = await self.outbox.depth()
        outbox = {
            "outbox_depth": waiting,
            "outbox_failed": failed,
            "outbox_set_aside": len(self.outbox.set_aside_files()),
            "outbox_problem": self.outbox.problems[-1] if self.outbox.problems else None,
        }
        return MemoryStats.model_validate({**data, **outbox})

    async def embedded_texts(self) -> list[StoredText]:
        rows = await self._rpc_rows(
            "embedded_texts", "read the embedded texts", ("chat_id", "kind", "start_seq", "end_seq")
        )
        return [
            StoredText(
                TextRef(
                    r["chat_id"],
                    r["kind"],
                    None if r["kind"] == "summary" else MessageRange(start=r["start_seq"], end=r["end_seq"]),
                ),
                r["body"],
            )
            for r in rows
        ]

    async def replace_embeddings(self, items: Sequence[tuple[TextRef, np.ndarray]], embedder: str) -> None:
        dims = {int(v.shape[0]) for _, v in items}
        if len(dims) > 1:
            raise EmbedderMismatch(f"vectors of several dimensions given: {sorted(dims)}")
        payload = [
            {
                "chat_id": ref.chat_id,
                "kind": ref.kind,
                "start_seq": ref.range.start if ref.range else 0,
                "end_seq": ref.range.end if ref.range else 0,
                "embedding": _vector(vector),
            }
            for ref, vector in items
        ]
        # staged in pages, then written in one transaction: the store never mixes two embedders
        for number, page in enumerate(_chunks(payload, _VECTOR_PAGE)):
            await self._rpc(
                "stage_embeddings", "stage the new embeddings", p_items=page, p_embedder=embedder, p_reset=number == 0
            )
        await self._rpc("commit_embeddings", "replace the embeddings", p_embedder=embedder)

    async def schema_version(self) -> int:
        """The remote schema's version (`parla db check`); raises with what to apply when absent."""
        version = int(await self._rpc("parla_schema_version", "check the schema", for_user=False))
        if version < SCHEMA_VERSION:
            raise StoreError(f"the Supabase schema is version {version}, Parla needs {SCHEMA_VERSION}: {_MIGRATE_HINT}")
        return version


async def sign_in(url: str, key: str, email: str, password: str, session_file: Path) -> str:
    """Sign in with email and password (`parla login`); the session goes to `session_file` (0600).
    Returns the user id."""
    async with httpx.AsyncClient(timeout=30.0) as http:
        options = AsyncClientOptions(
            persist_session=True,
            auto_refresh_token=False,
            storage=FileSessionStorage(session_file),
            postgrest_client_retry=False,
            httpx_client=http,
        )
        try:
            client = await acreate_client(url, key, options)
            response = await client.auth.sign_in_with_password({"email": email, "password": password})
        except AuthRetryableError as e:
            raise StoreOffline(f"Supabase at {url} is unreachable: {e.message}") from e
        except AuthError as e:
            raise StoreError(f"Supabase refused the sign-in: {e.message}") from e
        except httpx.TransportError as e:
            raise StoreOffline(f"Supabase at {url} is unreachable: {e}") from e
    if response.user is None or response.session is None:
        raise StoreError("Supabase answered the sign-in without a session: is the email confirmed?")
    return response.user.id


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


def _summary(row: dict[str, Any]) -> Summary:
    return Summary(
        chat_id=row["chat_id"],
        level=SummaryLevel(row["level"]),
        range=MessageRange(start=row["start_seq"], end=row["end_seq"]),
        text=row["summary"],
        updated_at=datetime.fromisoformat(row["updated_at"]),
    )


def _fact_params(chat_id: str, rng: MessageRange, lines: list[str], embedded: EmbeddedText | None) -> dict[str, Any]:
    return {
        "p_chat_id": chat_id,
        "p_start_seq": rng.start,
        "p_end_seq": rng.end,
        "p_facts": facts_text(lines, embedded),
        "p_embedding": _vector(embedded.vector) if embedded else None,
        "p_embedder": embedded.embedder if embedded else None,
    }


def _facts(row: dict[str, Any]) -> FactBlock:
    return FactBlock(
        chat_id=row["chat_id"],
        range=MessageRange(start=row["start_seq"], end=row["end_seq"]),
        lines=stored_fact_lines(row["facts"]),
        forgotten=stored_fact_lines(row.get("forgotten", "")),
        updated_at=datetime.fromisoformat(row["updated_at"]),
    )
