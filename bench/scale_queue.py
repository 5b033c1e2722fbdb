"""Works a store's summary queue to its end as the daemon's worker does, then exits:
`python -m bench.scale_queue` with the store and models in PARLA_ settings (`bench.scale` runs it
after `parla import` queued a big import's summaries, and times it)."""

from __future__ import annotations

import asyncio

from parla.daemon.memory_services import open_memory
from parla.daemon.settings import Settings


async def main() -> None:
    async with open_memory(Settings()) as mem, mem.summary_worker as worker:
        while (state := await mem.store.summary_queue()).waiting or worker.progress.current is not None:
            if state.last_error:  # the worker would try the chat again later: the benchmark says why now
                raise SystemExit(f"a queued chat failed: {state.last_error}")
            await asyncio.sleep(0.2)


if __name__ == "__main__":
    asyncio.run(main())
