"""The Supabase store's requests: one call with its error mapping, RPCs, table reads in pages
(Supabase answers at most "Max rows" rows per request), updates scoped to the user, and pin upserts.
The store's operations (`chats`, `memory`, `search`, `writes`, ...) are written on these."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import Any, TypeVar, cast

import httpx
from postgrest.exceptions import APIError
from supabase import AsyncClient

from parla.records.pins import Pin

from ...errors import ChatNotFound, StoreError
from .failures import supabase_error
from .replay import OutboxReplay
from .rows import is_uuid

T = TypeVar("T")

# Supabase answers at most "Max rows" rows per request (PostgREST's db-max-rows, 1000 by default;
# more are cut off silently): every read that can return more asks for pages of this size.
READ_PAGE = 1000


class SupabaseCalls:
    """The client, the user the requests are for (the service-role mode names it), and the calls;
    `_replay` is the store's outbox replay (`supabase.store`), through which its writes go."""

    _replay: OutboxReplay

    def __init__(self, client: AsyncClient, http: httpx.AsyncClient, user_id: str | None, user_session: bool) -> None:
        self._client = client
        self._http = http
        self._user_id = user_id
        self._user_session = user_session

    async def _call(self, doing: str, request: Callable[[], Awaitable[T]]) -> T:
        try:
            if self._user_session:
                await self._client.auth.get_session()  # refreshes an expiring session first
            return await request()
        except StoreError:
            raise
        except Exception as e:
            raise supabase_error(e, doing) from e

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
            want = READ_PAGE if limit is None else min(READ_PAGE, limit - len(rows))
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

    async def _upsert_pins(self, pins: Sequence[Pin], doing: str, *, ignore_duplicates: bool) -> list[Pin]:
        """Insert, and on an id already stored edit it or (ignore_duplicates) leave it as it is. An
        edit never changes whether the pin is forgotten, nor drops a source it has. One request a
        pin: a row without a source leaves that column out, which PostgREST cannot do per row."""
        stored = []
        for pin in pins:
            if not is_uuid(pin.chat_id):
                raise ChatNotFound(pin.chat_id)
            row = pin.model_dump(mode="json", exclude={"forgotten_at"}, exclude_none=True)
            if self._user_id is not None:
                row["user_id"] = self._user_id
            try:
                response = await self._call(doing, partial(self._upsert_pin, row, ignore_duplicates))
            except StoreError as e:
                if isinstance(e.__cause__, APIError) and e.__cause__.code == "23503":
                    raise ChatNotFound(pin.chat_id) from e
                raise
            stored += [Pin.model_validate(r) for r in response.data]
        return stored

    def _upsert_pin(self, row: dict[str, Any], ignore_duplicates: bool) -> Awaitable[Any]:
        query = self._client.table("chat_pins").upsert(row, on_conflict="id", ignore_duplicates=ignore_duplicates)
        return cast(Awaitable[Any], query.execute())
