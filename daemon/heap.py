"""The daemon's heap kept out of the garbage collector's way.

A full collection walks every object the collector tracks. Once the daemon is ready, most of them
are what it loaded to start (modules, the embedder's and the voice's models, settings) and live
as long as it does, and a full collection falls, every so often, in the middle of a request: at
5,000 chats a `recall` across chats that met one took it 60-120 ms longer on the shared test
machine. Frozen, they are left out of every later collection ("to speed up collection":
https://docs.python.org/3/library/gc.html#gc.freeze); what was already garbage is collected first,
so none of it is kept."""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


@asynccontextmanager
async def settled_heap() -> AsyncIterator[None]:
    """What is loaded when the block starts left out of the collector's passes while it runs,
    given back to the collector after (a daemon run inside another program: the tests)."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
