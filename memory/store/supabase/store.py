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

Beside this module: `supabase_calls` (requests and pages), `supabase_writes` (the user's writes), `supabase_rows` (rows and RPC parameters), `supabase_errors` (how a failure
is classified), `supabase_session` (signing in, the session file) and `supabase_replay` (the
outbox replay and its retry policy).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Self

import httpx
import numpy as np
from supabase import AsyncClient, AsyncClientOptions, acreate_client

from parla.records.chat import Chat, ChatHistory, storable_title
from parla.records.embedding import EmbeddedText
from parla.records.facts import FactBlock
from parla.records.pins import Pin
from parla.records.profile import ProfileEntry
from parla.records.progress import PendingWrites
from parla.records.stats import MemoryStats
from parla.records.summary import Summary, SummaryLevel
from parla.records.turn import MessageRange, Turn, new_id

from ...config import SUPABASE_COMMIT_PAGE
from ...errors import ChatNotFound, StoreError, StoreOffline
from ...language.importance import IMPORTANT
from ..checks import (
    check_one_dimension,
    check_unique_turn_ids,
    exact_id_first,
    text_ref,
    turn_match,
)
from ..outbox import Outbox, OutboxEntry
from ..protocol import (
    AppendResult,
    ChatMatch,
    CompactionCommit,
    EmbeddedWindow,
    MemorySnapshot,
    StoredText,
    TextMatch,
    TextRef,
    TurnMatch,
    WordCounts,
)
from . import profile as supabase_profile
from .failures import MIGRATE_HINT, check_gateway, supabase_error
from .queue import SupabaseQueue
from .reminders import REMINDER_WRITES, SupabaseReminders
from .replay import OutboxReplay, RetryPolicy
from .rows import (
    append_result,
    chat_of,
    chunks,
    fact_params,
    facts_of,
    is_uuid,
    kind_in_sql,
    kind_of_sql,
    page_key,
    summary_of,
    turn_payload,
    vector_value,
)
from .schema import SCHEMA_VERSION
from .session import FileSessionStorage, jwt_role
from .writes import USER_WRITES

log = logging.getLogger(__name__)

_PIN_COLUMNS = "id,chat_id,content,importance,pin_type,source_turn_id,source_seq,created_at,forgotten_at"
_CHAT_COLUMNS = "id,title,title_generated,created_at,last_activity_at,summary_text,rolling_summary,summarized_through,compaction_version,turn_count"
# Turns per write request, and per page of a long history: each request stays small and far
# inside the statement timeout (8 s for signed-in users), whatever the chat's length.
_TURN_PAGE = 500
_VECTOR_PAGE = 250  # new vectors per request when re-embedding (768 floats each)


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


class SupabaseChatStore(SupabaseReminders, SupabaseQueue):
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
        outbox = Outbox(outbox_path, remote=f"{url}#{user_id or 'session'}")
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
        """One queued write; turns are sent in pages: the first with the chat's creation, the
        others appended. Each page is idempotent by turn id, so a retry after a partial send
        stores every turn once, and carries a key of its own, so a retry of a page whose answer
        was lost gets that answer (its turns counted added) rather than "all stored already"."""
        if entry.op in USER_WRITES:
            return await self._send_user_write(entry)
        if entry.op in REMINDER_WRITES:
            return await self._send_reminder_write(entry)
        p = entry.payload
        results = []
        for number, page in enumerate(chunks(p["turns"], _TURN_PAGE)):
            create = entry.op == "create_chat" and number == 0
            key = page_key(entry.key, number)
            if not create:
                try:
                    data = await self._rpc(
                        "append_turns", "append turns", p_chat_id=entry.chat_id, p_turns=page, p_write_key=key
                    )
                except ChatNotFound:
                    if number:
                        raise
                    # Talk wins over delete: the chat was deleted (on another device) while this one
                    # talked in it; it comes back with what was said here since, so nothing said is lost.
                    # Another user's chat id stays refused: its creation fails the same way.
                    log.warning(
                        "chat %s was deleted elsewhere: brought back with the turns said in it here", entry.chat_id
                    )
                    create = True
            if create:
                data = await self._rpc(
                    "create_chat",
                    "create a chat",
                    p_chat_id=entry.chat_id,
                    p_title=p.get("title"),
                    p_created_at=p.get("created_at"),
                    p_turns=page,
                    p_write_key=key,
                )
            results.append(data)
        return append_result(results, [Turn.model_validate(t) for t in p["turns"]])

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
        if not is_uuid(chat_id):
            raise StoreError(f"a Supabase chat id is a UUID, not {chat_id!r}")
        created = created_at or (turns[0].created_at if turns else None)
        payload = {
            "title": storable_title(title, chat_id),
            "created_at": created.isoformat() if created else None,
            "turns": [turn_payload(t) for t in turns],
        }
        result: AppendResult = await self._replay.write_through("create_chat", chat_id, payload)
        return result

    async def append_turns(self, chat_id: str, turns: Sequence[Turn]) -> AppendResult:
        if not is_uuid(chat_id):
            raise ChatNotFound(chat_id)
        if not turns:
            return AppendResult(await self.get_chat(chat_id), [], 0)
        check_unique_turn_ids(turns)
        payload = {"turns": [turn_payload(t) for t in turns]}
        result: AppendResult = await self._replay.write_through("append_turns", chat_id, payload)
        return result

    async def get_chat(self, chat_id: str) -> Chat:
        return (await self._load(chat_id, 1, 0))[0]

    async def _load(self, chat_id: str, start: int, end: int | None) -> tuple[Chat, list[Turn]]:
        """The chat and its turns `start`..`end`, read in pages of turns: the chat as the first
        page found it, and its turns up to the count it had then."""
        if not is_uuid(chat_id):
            raise ChatNotFound(chat_id)
        await self._replay.send_queued_first()
        start = max(start, 1)  # seqs start at 1: counting from there finds every page

        async def page(first: int, last: int) -> tuple[Chat, list[Turn]]:
            last = min(last, first + _TURN_PAGE - 1)
            data = await self._rpc("load_chat", "load a chat", p_chat_id=chat_id, p_from_seq=first, p_to_seq=last)
            return chat_of(data["chat"]), [Turn.model_validate(t) for t in data["turns"]]

        chat, turns = await page(start, start + _TURN_PAGE - 1 if end is None else end)
        last = chat.turn_count if end is None else min(end, chat.turn_count)
        while turns and len(turns) % _TURN_PAGE == 0 and start + len(turns) <= last:
            turns += (await page(start + len(turns), last))[1]
        return chat, turns

    async def load_memory(
        self, chat_id: str, *, min_importance: float = IMPORTANT, important_limit: int = 30
    ) -> MemorySnapshot:
        if not is_uuid(chat_id):
            raise ChatNotFound(chat_id)
        await self._replay.send_queued_first()
        data = await self._rpc(
            "load_memory",
            "load a chat's memory",
            p_chat_id=chat_id,
            p_min_importance=min_importance,
            p_important_limit=important_limit,
        )
        return MemorySnapshot(
            chat=chat_of(data["chat"]),
            tail=[Turn.model_validate(t) for t in data["turns"]],
            pins=[Pin.model_validate(p) for p in data["pins"]],
            metas=[summary_of(r) for r in data["metas"]],
            facts=[facts_of(r) for r in data["facts"]],
            important=[Turn.model_validate(t) for t in data["important"]],
        )

    async def find_chats(self, ref: str) -> list[Chat]:
        await self._replay.send_queued_first()
        rows = await self._rpc("find_chats", "find chats", p_ref=ref)
        return [chat_of(r) for r in exact_id_first(rows, ref, lambda r: r["id"])]

    async def list_chats(self, limit: int = 50, offset: int = 0) -> list[Chat]:
        await self._replay.send_queued_first()  # a rename, delete or new chat of this device's is seen
        rows = await self._select(
            "list chats",
            lambda c: c.table("chats").select(_CHAT_COLUMNS).order("last_activity_at", desc=True).order("id"),
            offset=offset,
            limit=limit,
        )
        return [chat_of(r) for r in rows]

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
            p_summary_text=commit.summary_text.text,
            p_summary_embedding=vector_value(commit.summary_text.vector),
            p_embedder=commit.summary_text.embedder,
            p_title=storable_title(commit.title, commit.chat_id),
        )
        return chat_of(data) if data else None

    async def set_summary_text(
        self, chat_id: str, summary_text: EmbeddedText, expected_version: int, title: str | None = None
    ) -> bool:
        return bool(
            await self._rpc(
                "set_description",
                "describe a chat",
                p_chat_id=chat_id,
                p_expected_version=expected_version,
                p_summary_text=summary_text.text,
                p_summary_embedding=vector_value(summary_text.vector),
                p_embedder=summary_text.embedder,
                p_title=storable_title(title, chat_id),
            )
        )

    # -- summaries and facts ---------------------------------------------------------------

    async def upsert_summary(
        self,
        chat_id: str,
        level: SummaryLevel,
        rng: MessageRange,
        embedded: EmbeddedText,
        importance: float | None = None,
    ) -> Summary:
        row = await self._rpc(
            "upsert_summary",
            "store a summary",
            p_chat_id=chat_id,
            p_level=int(level),
            p_start_seq=rng.start,
            p_end_seq=rng.end,
            p_summary=embedded.text,
            p_embedding=vector_value(embedded.vector),
            p_embedder=embedded.embedder,
            p_importance=importance,
        )
        return summary_of(row)

    async def list_summaries(self, chat_id: str, level: SummaryLevel | None = None) -> list[Summary]:
        def build(c: AsyncClient) -> Any:
            q = (
                c.table("chat_summaries")
                .select("chat_id,level,start_seq,end_seq,summary,updated_at,importance")
                .eq("chat_id", chat_id)
            )
            if level is not None:
                q = q.eq("level", int(level))
            return q.order("level").order("start_seq").order("end_seq")

        if not is_uuid(chat_id):
            return []
        return [summary_of(r) for r in await self._select("list summaries", build)]

    async def upsert_facts(
        self, chat_id: str, rng: MessageRange, lines: list[str], embedded: EmbeddedText | None
    ) -> FactBlock:
        return facts_of(await self._rpc("upsert_facts", "store facts", **fact_params(chat_id, rng, lines, embedded)))

    async def list_facts(self, chat_id: str) -> list[FactBlock]:
        if not is_uuid(chat_id):
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
        return [facts_of(r) for r in rows]

    # -- pins ------------------------------------------------------------------------------

    async def add_new_pins(self, pins: Sequence[Pin]) -> list[Pin]:
        return await self._upsert_pins(pins, "pin facts", ignore_duplicates=True) if pins else []

    async def list_pins(self, chat_id: str, *, forgotten: bool = False) -> list[Pin]:
        if not is_uuid(chat_id):
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

    # -- the user's profile ----------------------------------------------------------------

    async def save_profile(self, entries: Sequence[ProfileEntry], *, edit: bool = False) -> list[ProfileEntry]:
        return await supabase_profile.save_profile(self._replay, entries, edit)

    async def list_profile(self, *, history: bool = False) -> list[ProfileEntry]:
        await self._replay.send_queued_first()  # the profile writes of this device's are seen
        return await supabase_profile.list_profile(self._rpc, history)

    async def set_profile_forgotten(self, entry_id: str, forgotten: bool) -> ProfileEntry:
        return await supabase_profile.set_profile_forgotten(self._replay, entry_id, forgotten)

    # -- embeddings and search -------------------------------------------------------------

    async def search(self, query: EmbeddedText, match_count: int, texts_per_chat: int = 1) -> list[ChatMatch]:
        await self._replay.send_queued_first()
        rows = await self._rpc_rows(
            "search_chats_semantic",
            "search chats",
            ("chat_rank", "text_rank"),
            limit=match_count * texts_per_chat,
            query_embedding=vector_value(query.vector),
            match_count=match_count,
            p_embedder=query.embedder,
            p_texts_per_chat=texts_per_chat,
        )
        by_chat: dict[str, list[dict[str, Any]]] = {}
        for r in rows:
            by_chat.setdefault(r["chat_id"], []).append(r)
        return [
            ChatMatch(
                chat_id=chat_id,
                title=texts[0]["title"],
                created_at=datetime.fromisoformat(texts[0]["created_at"]),
                last_activity_at=datetime.fromisoformat(texts[0]["last_activity_at"]),
                texts=tuple(
                    TextMatch(
                        text_ref(chat_id, kind_of_sql(r["matched_kind"]), r["start_seq"], r["end_seq"]),
                        r["matched_text"],
                        float(r["similarity"]),
                    )
                    for r in texts
                ),
            )
            for chat_id, texts in by_chat.items()
        ]

    async def search_chat(self, query: EmbeddedText, chat_id: str, match_count: int) -> list[TextMatch]:
        if not is_uuid(chat_id):
            return []
        rows = await self._rpc(
            "search_chat_texts",
            "search a chat",
            p_chat_id=chat_id,
            query_embedding=vector_value(query.vector),
            match_count=match_count,
            p_embedder=query.embedder,
        )
        return [
            TextMatch(
                text_ref(chat_id, kind_of_sql(r["matched_kind"]), r["start_seq"], r["end_seq"]),
                r["matched_text"],
                float(r["similarity"]),
            )
            for r in rows
        ]

    async def window_frontier(self, chat_id: str, size: int) -> int:
        if not is_uuid(chat_id):
            raise ChatNotFound(chat_id)
        return int(await self._rpc("window_frontier", "read the search index", p_chat_id=chat_id, p_size=size))

    async def window_text(self, chat_id: str, start: int) -> str | None:
        if not is_uuid(chat_id):
            return None
        rows = await self._select(
            "read the search index",
            lambda c: c.table("chat_windows").select("body").eq("chat_id", chat_id).eq("start_seq", start),
            limit=1,
        )
        return str(rows[0]["body"]) if rows else None

    async def upsert_windows(self, chat_id: str, windows: Sequence[EmbeddedWindow]) -> None:
        if not windows:
            return
        payload = [
            {
                "start_seq": w.range.start,
                "end_seq": w.range.end,
                "body": w.embedded.text,
                "words": w.words,
                "embedding": vector_value(w.embedded.vector),
                "embedder": w.embedded.embedder,
            }
            for w in windows
        ]
        await self._rpc("upsert_windows", "index what was said", p_chat_id=chat_id, p_windows=payload)

    async def word_counts(self, words: Sequence[str]) -> WordCounts:
        rows = await self._rpc_rows("word_counts", "read the word counts", ("word",), p_words=list(words))
        counts = {r["word"]: int(r["windows"]) for r in rows}
        return WordCounts(windows=counts.pop("", 0), counts=counts)

    async def search_words(self, words: Sequence[str], match_count: int, chat_id: str | None = None) -> list[TurnMatch]:
        if not words or match_count <= 0:
            return []
        rows = await self._rpc_rows(
            "search_turn_words",
            "search the turns' words",
            ("score.desc", "chat_id", "seq"),
            limit=match_count,
            p_words=list(words),
            match_count=match_count,
            p_chat_id=chat_id,
        )
        return [turn_match(r) for r in rows]

    async def embedder_info(self) -> tuple[str, int] | None:
        stats = await self._rpc("memory_stats", "read the store's embedder")
        return (stats["embedder"], int(stats["embedding_dim"])) if stats["embedder"] else None

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

    async def embedded_texts(self) -> list[StoredText]:
        rows = await self._rpc_rows(
            "embedded_texts", "read the embedded texts", ("chat_id", "kind", "start_seq", "end_seq")
        )
        return [
            StoredText(
                text_ref(r["chat_id"], kind_of_sql(r["kind"]), r["start_seq"], r["end_seq"]),
                r["body"],
            )
            for r in rows
        ]

    async def replace_embeddings(self, items: Sequence[tuple[TextRef, np.ndarray]], embedder: str) -> None:
        check_one_dimension(items)
        payload = [
            {
                "chat_id": ref.chat_id,
                "kind": kind_in_sql(ref.kind),
                "start_seq": ref.range.start if ref.range else 0,
                "end_seq": ref.range.end if ref.range else 0,
                "embedding": vector_value(vector),
            }
            for ref, vector in items
        ]
        # staged in pages, then written in pages; searches keep to the old vectors until the last
        # page is written, so they never compare vectors of two embedders
        for number, page in enumerate(chunks(payload, _VECTOR_PAGE)):
            await self._rpc(
                "stage_embeddings", "stage the new embeddings", p_items=page, p_embedder=embedder, p_reset=number == 0
            )
        while await self._rpc(
            "commit_embeddings", "replace the embeddings", p_embedder=embedder, p_page=self.commit_page
        ):
            pass

    async def schema_version(self) -> int:
        """The remote schema's version (`parla db check`); raises with what to apply when absent."""
        version = int(await self._rpc("parla_schema_version", "check the schema", for_user=False))
        if version < SCHEMA_VERSION:
            raise StoreError(f"the Supabase schema is version {version}, Parla needs {SCHEMA_VERSION}: {MIGRATE_HINT}")
        return version
