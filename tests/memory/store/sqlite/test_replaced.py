"""The SQLite file, its -wal or -shm deleted or replaced under an open store (another program, a
user cleaning up): the store notices at its next operation, refuses it loudly instead of writing
into a file that is no longer the database, and its close leaves the database as the other
processes wrote it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from parla.memory.errors import StoreError
from parla.memory.store.sqlite.store import SQLiteChatStore
from parla.records.turn import Turn
from tests.conftest import make_turns

pytestmark = pytest.mark.tier("process")

_OTHER_PROCESS = """
import asyncio, sys
from parla.memory.store.sqlite.store import SQLiteChatStore
from parla.records.turn import Turn

async def main():
    async with SQLiteChatStore(sys.argv[1]) as store:
        for i in range(12):
            await store.create_chat(title=f"imported {i}", turns=[Turn.of("user", f"imported turn {i}")])

asyncio.run(main())
"""


def _another_process_writes_12_chats(path: Path) -> None:
    subprocess.run([sys.executable, "-c", _OTHER_PROCESS, str(path)], check=True, timeout=60)


@pytest.mark.parametrize("deleted", [("-wal", "-shm"), ("", "-wal", "-shm")], ids=["wal-and-shm", "all"])
async def test_files_deleted_under_the_open_store_stop_its_writes_and_lose_no_other_write(tmp_path, caplog, deleted):
    path = tmp_path / "parla.db"
    store = SQLiteChatStore(path)
    await store.open()
    try:
        said = [Turn.of("user", "the heron flew over the lake"), Turn.of("model", "a grey one")]
        chat = (await store.create_chat(title="before", turns=[*said, Turn.of("user", "it fished")])).chat
        assert await store.search_words(["heron"], 5)  # the word search's own connection is open too
        for suffix in deleted:
            Path(f"{path}{suffix}").unlink()
        _another_process_writes_12_chats(path)
        with pytest.raises(StoreError, match="deleted or replaced while Parla ran"):
            await store.append_turns(chat.id, make_turns(2))
        with pytest.raises(StoreError, match="deleted or replaced while Parla ran"):  # every operation, not once
            await store.list_chats()
        with pytest.raises(StoreError, match="deleted or replaced while Parla ran"):
            await store.search_words(["heron"], 5)
        assert [r for r in caplog.records if r.levelname == "ERROR" and "deleted or replaced" in r.message]
    finally:
        await store.close()
    async with SQLiteChatStore(path) as reopened:
        titles = {c.title for c in await reopened.list_chats()}
    assert {f"imported {i}" for i in range(12)} <= titles
