"""Supabase away: `python -m bench.offline [--quick]`. Prints its figures; asserts nothing.

The Supabase store with this device's copy (`LocalCopyStore`, as the daemon opens it) over real
Postgres 18 + pgvector behind the PostgREST shim, 1,000 chats of 50 turns (200 with --quick)
written through it, as compaction and the window indexer leave them:

- a spoken switch (the `switch_chat` tool, then the winner's seed), p50 / p95, online (Supabase
  answers; the copy is updated on the way) and offline (the shim refuses every connection; the
  copy answers), beside the same switch on the Supabase store without a copy and on the SQLite
  store alone (the figure offline aims at);
- 1,000 writes queued while offline (turns, pins, renames, forgets of those pins and new chats, in
  turn), then the time to replay them once Supabase answers again.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from contextlib import suppress
from pathlib import Path

from bench.memory import percentile
from bench.report import Report, Table, parse
from bench.switch import fill, switch_times
from parla.memory.errors import WriteQueued
from parla.memory.store.local_copy import LocalCopyStore
from parla.memory.store.sqlite.store import SQLiteChatStore
from parla.memory.store.supabase.session import sign_in
from parla.memory.store.supabase.store import RetryPolicy, SupabaseChatStore
from parla.records.pins import Pin
from parla.records.turn import Turn, new_id
from tests.peers.postgrest import ANON_KEY, PostgrestShim
from tests.peers.supabase_peer import PostgresCluster

WRITES = 1000


def row(table: Table, label: str, times: list[float]) -> None:
    table.row(label, f"{percentile(times, 0.5):.2f}", f"{percentile(times, 0.95):.2f}")


async def queue_writes(store: LocalCopyStore, chat_ids: list[str]) -> float:
    """`WRITES` writes the user could ask for while Supabase is away, in turn: a turn, a pin, a
    rename, a forget of that pin, a new chat. Seconds they took to answer (all queued)."""
    started = time.perf_counter()
    pin_id = ""
    for i in range(WRITES):
        chat_id = chat_ids[i % len(chat_ids)]
        with suppress(WriteQueued):
            match i % 5:
                case 0:
                    await store.append_turns(chat_id, [Turn.of("user", f"said offline {i}")])
                case 1:
                    pin = Pin(chat_id=chat_id, content=f"kept {i}")
                    pin_id = pin.id
                    await store.add_pin(pin)
                case 2:
                    await store.rename_chat(chat_id, f"renamed offline {i}")
                case 3:
                    await store.set_pin_forgotten(pin_id, True)
                case _:
                    await store.create_chat(chat_id=new_id(), title=f"new offline {i}")
    return time.perf_counter() - started


async def main(out: Report, quick: bool) -> None:
    chats, runs = (200, 20) if quick else (1000, 60)
    cluster = PostgresCluster()
    try:
        with tempfile.TemporaryDirectory() as tmp, PostgrestShim(cluster.new_database(), pool_size=2) as shim:
            shim.create_user("bench@example.com", "pw")
            session = Path(tmp) / "session.json"
            await sign_in(shim.url, ANON_KEY, "bench@example.com", "pw", session)
            remote = await SupabaseChatStore.connect(
                shim.url,
                ANON_KEY,
                outbox_path=Path(tmp) / "outbox.db",
                session_file=session,
                retry=RetryPolicy(attempts=1, delay=60.0, max_delay=60.0),  # the replay is timed here
            )
            async with (
                remote,
                SQLiteChatStore(Path(tmp) / "copy.db") as copy,
                SQLiteChatStore(Path(tmp) / "alone.db") as alone,
            ):
                store = LocalCopyStore(remote, copy)
                filled = await fill(store, chats, 50)
                await fill(alone, chats, 50)
                # measured one after the other, each warmed up by one switch
                _, remote_ms = await switch_times(remote, runs)
                _, online_ms = await switch_times(store, runs)
                shim.refuse()
                _, offline_ms = await switch_times(store, runs)
                _, sqlite_ms = await switch_times(alone, runs)
                table = Table(
                    ["", "p50 ms", "p95 ms"],
                    title=f"{chats:,} chats of 50 turns written through the copy in {filled:.1f} s; {runs} switches each",
                )
                row(table, "switch, Supabase alone (no copy)", remote_ms)
                row(table, "switch, Supabase online (with the copy)", online_ms)
                row(table, "switch, Supabase offline (the copy)", offline_ms)
                row(table, "switch, SQLite store alone", sqlite_ms)
                out.table(table)
                ids = [c.id for c in await store.list_chats(limit=chats)]
                queued = await queue_writes(store, ids)
                waiting = (await store.pending_writes()).waiting
                out.line(
                    f"{waiting:,} writes queued offline, answered in {queued:.2f} s ({queued / WRITES * 1000:.2f} ms each)"
                )
                shim.recover()
                started = time.perf_counter()
                sent = await store.flush()
                replay = time.perf_counter() - started
                left = (await store.pending_writes()).waiting
                out.line(f"replay once Supabase answers: {sent:,} writes in {replay:.2f} s, {left} left")
    finally:
        cluster.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200 chats, 20 runs")
    args, out = parse(parser)
    asyncio.run(main(out, args.quick))
