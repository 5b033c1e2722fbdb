"""The stores Parla can keep chats in (`BACKENDS`, by the name PARLA_STORE gives), and the one the
settings name, opened without the rest of the memory: the commands that only read it (`parla
chats`, `stats`, `show`, `export`) load neither google-genai nor supabase-py nor an embedder on
the SQLite store, and start in a fraction of the time (bench/cli_startup.py).

A new backend is a package under memory/store/ whose store answers `ChatStore` (its writes of
turns through `memory.store.scoring.ScoredWrites`), an entry here (how it opens, how messages name
it), its name in `StoreName` (daemon/settings.py), and a parameter of the contract suite's
`any_store` (tests/conftest.py)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, SecretStr

from parla.memory.store.protocol import ChatStore
from parla.memory.store.sqlite.file import create_private, tighten
from parla.memory.store.sqlite.store import SQLiteChatStore

from .errors import ConfigError
from .settings import Settings, StoreName

if TYPE_CHECKING:
    from parla.memory.store.supabase.store import SupabaseChatStore


def _secret(value: SecretStr | None) -> str | None:
    return value.get_secret_value() if value is not None and value.get_secret_value() else None


def supabase_url(settings: Settings) -> str:
    if not settings.supabase_url:
        raise ConfigError(
            "PARLA_STORE=supabase needs PARLA_SUPABASE_URL (the project URL, Settings → API in the Supabase dashboard)"
        )
    return settings.supabase_url


def supabase_anon_key(settings: Settings) -> str:
    key = _secret(settings.supabase_key)
    if key is None:
        raise ConfigError("set PARLA_SUPABASE_KEY to the project's anon (publishable) key, then run `parla login`")
    return key


def service_role(settings: Settings) -> bool:
    """The service-role mode (a key and a user id) rather than a session of `parla login`."""
    return _secret(settings.supabase_service_key) is not None or bool(settings.supabase_user_id)


def outbox_remote(settings: Settings) -> str | None:
    """Whom the outbox's entries are queued for now (the project and its user); None off Supabase."""
    from parla.memory.store.outbox import remote_of

    if settings.store != "supabase":
        return None
    return remote_of(supabase_url(settings), settings.supabase_user_id if service_role(settings) else None)


async def connect_supabase(settings: Settings) -> SupabaseChatStore:
    """The Supabase store the settings describe: the service-role key with a user id, or the anon
    key with the session `parla login` saved."""
    # imported here: supabase-py and psycopg add about 20 MB to a daemon on the SQLite store
    from parla.memory.store.supabase.replay import RetryPolicy
    from parla.memory.store.supabase.store import SupabaseChatStore

    url = supabase_url(settings)
    retry = RetryPolicy(
        settings.supabase_retry_attempts, settings.supabase_retry_delay, settings.supabase_retry_max_delay
    )
    # the outbox holds turns not yet sent, in the store's file: as private as the SQLite store
    await asyncio.to_thread(create_private, settings.store_path)
    await asyncio.to_thread(tighten, settings.store_path)
    common = {
        "outbox_path": settings.store_path,
        "timeout": settings.supabase_timeout,
        "retry": retry,
        "commit_page": settings.supabase_commit_page,
    }
    service_key = _secret(settings.supabase_service_key)
    if service_role(settings):
        if service_key is None or not settings.supabase_user_id:
            raise ConfigError(
                "the service-role mode needs both PARLA_SUPABASE_SERVICE_KEY and PARLA_SUPABASE_USER_ID "
                "(or unset both and sign in with `parla login`)"
            )
        try:
            uuid.UUID(settings.supabase_user_id)
        except ValueError:
            raise ConfigError(
                f"PARLA_SUPABASE_USER_ID must be the user's UUID (Authentication → Users), not "
                f"{settings.supabase_user_id!r}"
            ) from None
        return await SupabaseChatStore.connect(url, service_key, user_id=settings.supabase_user_id, **common)
    return await SupabaseChatStore.connect(
        url, supabase_anon_key(settings), session_file=settings.supabase_session_file, **common
    )


@asynccontextmanager
async def _open_sqlite(settings: Settings) -> AsyncIterator[ChatStore]:
    async with SQLiteChatStore(settings.store_path, settings) as store:
        yield store


@asynccontextmanager
async def _open_supabase(settings: Settings) -> AsyncIterator[ChatStore]:
    """Supabase with this device's copy, which answers while it is away."""
    from parla.memory.store.local_copy import LocalCopyStore

    remote = await connect_supabase(settings)
    # the copy holds the user's chats: as private as the SQLite store
    await asyncio.to_thread(create_private, settings.copy_path)
    await asyncio.to_thread(tighten, settings.copy_path)
    async with remote, SQLiteChatStore(settings.copy_path, settings) as copy:
        yield LocalCopyStore(remote, copy, settings.supabase_recheck_s)


def _sqlite_size(settings: Settings) -> BaseModel:
    from parla.memory.store.sqlite.size import store_size

    return store_size(settings.store_path)


@dataclass(frozen=True)
class StoreBackend:
    """A place chats are kept: how it opens and how Parla names it to the user."""

    name: StoreName  # PARLA_STORE's value
    label: str  # how messages name it ("SQLite /path/parla.db")
    open: Callable[[Settings], AbstractAsyncContextManager[ChatStore]]
    # where it is (a file, a project's URL), and the key `parla stats --json` gives that under
    location: Callable[[Settings], str | None]
    location_key: Literal["path", "url"]
    # what to try when it cannot be opened, beyond what its error says
    fix: str = ""
    # what takes its bytes (`parla stats`), for a store on this machine
    size: Callable[[Settings], BaseModel] | None = None

    def describe(self, settings: Settings) -> str:
        return f"{self.label} {self.location(settings)}"


SQLITE = StoreBackend("sqlite", "SQLite", _open_sqlite, lambda s: str(s.store_path), "path", size=_sqlite_size)
SUPABASE = StoreBackend(
    "supabase",
    "Supabase",
    _open_supabase,
    lambda s: s.supabase_url,
    "url",
    fix="`parla db migrate` or `parla login`",
)
BACKENDS: dict[StoreName, StoreBackend] = {b.name: b for b in (SQLITE, SUPABASE)}


def backend(settings: Settings) -> StoreBackend:
    """The backend the settings name."""
    return BACKENDS[settings.store]


def open_store(settings: Settings) -> AbstractAsyncContextManager[ChatStore]:
    """The store the settings name, opened (use with `async with`)."""
    return backend(settings).open(settings)
