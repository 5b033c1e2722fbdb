"""The daemon's fill of this device's copy: `python -m bench.copy_fill [--quick]`. Prints its
figures; asserts nothing.

Another device writes 300 chats of 60 turns (60 with --quick) to Supabase (real Postgres 18 +
pgvector behind the PostgREST shim); this device's copy, empty, is filled by `CopyFill` as the
daemon runs it (pages of 100, no pause between chats). Figures: the first round (every chat
copied), a second round at once (every chat held whole: the listing alone should be its cost),
and the listing alone as the baseline, with the CPU of this process.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from bench.memory import populate
from bench.report import Report, Table, parse
from parla.memory.store.copy_fill import CopyFill, filled_marker
from parla.memory.store.local_copy import LocalCopyStore
from parla.memory.store.sqlite.store import SQLiteChatStore
from parla.memory.store.supabase.session import sign_in
from parla.memory.store.supabase.store import SupabaseChatStore
from tests.peers.postgrest import ANON_KEY, PostgrestShim
from tests.peers.supabase_peer import PostgresCluster

PAGE = 100


async def timed(work: Callable[[], Awaitable[object]]) -> tuple[float, float]:
    """Wall and CPU seconds of `await work()`."""
    wall, cpu = time.perf_counter(), time.process_time()
    await work()
    return time.perf_counter() - wall, time.process_time() - cpu


async def main(out: Report, quick: bool) -> None:
    chats, turns = (60, 60) if quick else (300, 60)
    cluster = PostgresCluster()
    try:
        with tempfile.TemporaryDirectory() as tmp, PostgrestShim(cluster.new_database(), pool_size=2) as shim:
            shim.create_user("bench@example.com", "pw")
            session = Path(tmp) / "session.json"
            await sign_in(shim.url, ANON_KEY, "bench@example.com", "pw", session)

            async def device(name: str) -> SupabaseChatStore:
                return await SupabaseChatStore.connect(
                    shim.url, ANON_KEY, outbox_path=Path(tmp) / f"{name}.db", session_file=session
                )

            async with await device("laptop") as laptop:  # the other device
                await populate(laptop, 0, chats, random.Random(5), turns)
            async with await device("phone") as remote, SQLiteChatStore(Path(tmp) / "copy.db") as local:
                copy = LocalCopyStore(remote, local)
                fill = CopyFill(copy, filled_marker(Path(tmp) / "copy.db"), every_s=0, pause_s=0, page=PAGE)
                copied: list[int] = []

                async def round_() -> None:
                    copied.append(await fill.fill())

                first = await timed(round_)
                second = await timed(round_)
                listing = await timed(fill._listed)  # the baseline: what every round asks
                held = len(await local.list_chats(limit=chats + 1))
            table = Table(
                ["", "chats copied", "wall s", "CPU s", "ms a chat", "x listing"],
                title=f"{chats} chats of {turns} turns another device wrote; pages of {PAGE}",
            )
            for label, (wall, cpu), n in (
                ("first round (empty copy)", first, copied[0]),
                ("second round (copy whole)", second, copied[1]),
                ("listing alone (baseline)", listing, 0),
            ):
                table.row(
                    label, n, f"{wall:.2f}", f"{cpu:.2f}", f"{wall / chats * 1000:.1f}", f"{wall / listing[0]:.1f}"
                )
            out.table(table)
            out.line(f"the copy holds {held} chats")
    finally:
        cluster.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="60 chats")
    args, out = parse(parser)
    asyncio.run(main(out, args.quick))
