"""The daemon's heap kept out of the garbage collector's way.

A full collection walks every object the collector tracks, with the interpreter's lock held.
Once the daemon is ready, most of them are what it loaded to start (modules, models, settings:
about 195,000 objects) and live as long as it does; a full pass over them costs about 100 ms of
CPU time, and fell in about one `recall` across chats in ten at 5,000 chats
(`bench.recall_latency --store`; docs/design/recall.md). Frozen, they are left out of every
later collection ("to speed up collection": https://docs.python.org/3/library/gc.html#gc.freeze);
what was already garbage is collected first, so none of it is kept. A frozen object that later
becomes part of a garbage cycle stays until the daemon stops: bounded by what it held at ready,
since nothing made after is frozen."""

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
