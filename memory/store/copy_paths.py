"""The paths a call of the local copy (`local_copy.LocalCopyStore`) takes between the remote store
and this device's copy, and the calls that take one as they are, declared by the protocol method
they pass on (`get_chat = read(ChatRecords.get_chat)`): the signature is the protocol's, and the
caller's arguments go to the remote and to the copy alike.

- `read`: the remote's answer, or the copy's while the remote is away.
- `written`: a write the user asks for: the remote's (queued in its outbox while it is away),
  then the same write applied to the copy.
- `background`: a write the device makes by itself (compaction, index): the remote's, then the
  copy's; refused while reads come from the copy.
- `remote_only`: the remote's alone (the copy keeps no such thing).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Concatenate, Generic, ParamSpec, Self, TypeVar, overload

from ..errors import StoreError, StoreOffline, WriteQueued
from .protocol import ChatStore

log = logging.getLogger("parla.memory.store.local_copy")

P = ParamSpec("P")
T = TypeVar("T")


class CopyPaths:
    """A remote store and this device's copy of it, and the paths between them. The caller opens
    and closes both."""

    def __init__(self, remote: ChatStore, local: ChatStore, recheck_s: float = 30.0) -> None:
        """`recheck_s`: once the remote was found away, reads go to the copy alone for that long
        (a network that drops packets would otherwise cost each read the remote's timeout)."""
        self.remote = remote
        self.local = local
        self.recheck_s = recheck_s
        self._away_until = 0.0  # monotonic time until which reads skip the remote

    @property
    def offline(self) -> bool:
        """The last request to the remote found it away."""
        return self._away_until > 0

    @offline.setter
    def offline(self, away: bool) -> None:
        self._away_until = time.monotonic() + self.recheck_s if away else 0.0

    async def _read(
        self,
        remote: Callable[[], Awaitable[T]],
        local: Callable[[], Awaitable[T]],
        copy: Callable[[T], Awaitable[object]] | None = None,
    ) -> T:
        """The remote's answer (copied with `copy`), or the local copy's when the remote is away."""
        if time.monotonic() < self._away_until:
            return await local()
        try:
            return await self._reach(remote, copy)
        except StoreOffline:
            return await local()

    async def _write(self, remote: Callable[[], Awaitable[T]], copy: Callable[[T | None], Awaitable[object]]) -> T:
        """The remote's write, copied locally (`copy` gets its result); a write queued in the
        outbox is applied to the copy (`copy` gets None) and `WriteQueued` raised on."""
        try:
            return await self._reach(remote, copy)
        except WriteQueued:
            await self._copy(copy(None))
            raise

    async def _background(
        self, remote: Callable[[], Awaitable[T]], copy: Callable[[T], Awaitable[object]] | None = None
    ) -> T:
        """A write the device makes by itself (compaction, index): the remote's, copied. Refused
        while reads come from the copy: what it was made from may lack what other devices added
        (their turns shift the numbers), so it is made again from the remote's answers later."""
        if self.offline:
            raise StoreOffline("Supabase was away a moment ago: this waits until it answers again")
        return await self._reach(remote, copy)

    async def _reach(
        self, remote: Callable[[], Awaitable[T]], copy: Callable[[T], Awaitable[object]] | None = None
    ) -> T:
        """The remote's call, copied; whether it answered sets `offline`."""
        try:
            result = await remote()
        except StoreOffline:
            self.offline = True
            raise
        self.offline = False
        if copy is not None:
            await self._copy(copy(result))
        return result

    async def _copy(self, work: Awaitable[object]) -> None:
        try:
            await work
        except StoreError as e:  # the copy is a cache: the call it follows has succeeded
            log.info("the local copy was not updated: %s", e)


# A path: how one call goes, given the copy and the call made on the remote and on the copy.
Path = Callable[[CopyPaths, Callable[[], Awaitable[Any]], Callable[[], Awaitable[Any]]], Awaitable[Any]]
# A protocol method, as `ChatRecords.get_chat` names it.
Method = Callable[Concatenate[Any, P], Coroutine[Any, Any, T]]


class Passed(Generic[P, T]):
    """A protocol call the copy passes on by `path`, with the caller's arguments."""

    def __init__(self, path: Path, method: Method[P, T]) -> None:
        self._path = path
        self._name = method.__name__

    @overload
    def __get__(self, copy: None, owner: type) -> Self: ...

    @overload
    def __get__(self, copy: CopyPaths, owner: type) -> Callable[P, Coroutine[Any, Any, T]]: ...

    def __get__(self, copy: CopyPaths | None, owner: type) -> Self | Callable[P, Coroutine[Any, Any, T]]:
        if copy is None:
            return self
        name, path = self._name, self._path

        async def call(*args: P.args, **kwargs: P.kwargs) -> T:
            def on(store: ChatStore) -> Callable[[], Awaitable[T]]:
                return lambda: getattr(store, name)(*args, **kwargs)

            result: T = await path(copy, on(copy.remote), on(copy.local))
            return result

        return call


def read(method: Method[P, T]) -> Passed[P, T]:
    return Passed(lambda copy, remote, local: copy._read(remote, local), method)


def written(method: Method[P, T]) -> Passed[P, T]:
    return Passed(lambda copy, remote, local: copy._write(remote, lambda _: local()), method)


def background(method: Method[P, T]) -> Passed[P, T]:
    return Passed(lambda copy, remote, local: copy._background(remote, lambda _: local()), method)


def remote_only(method: Method[P, T]) -> Passed[P, T]:
    return Passed(lambda copy, remote, local: remote(), method)
