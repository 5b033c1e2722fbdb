"""The SQLite store's vector index file: the exact search's answers, kept up to date chat by chat,
never rebuilt at open, whole after a process is killed mid-write or another process writes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from parla.memory.config import MemoryConfig
from parla.memory.errors import StoreError
from parla.memory.store.protocol import ChatStore, EmbeddedWindow
from parla.memory.store.sqlite.rows import VECTOR_DTYPE
from parla.memory.store.sqlite.store import SQLiteChatStore
from parla.memory.store.sqlite.vector_file import sign_bits
from parla.records.embedding import EmbeddedText
from parla.records.turn import MessageRange
from tests.conftest import make_turns

pytestmark = pytest.mark.tier("fast")

DIM = 256
EMBEDDER = "test-256"
# float32 dot products differ in their last bits with the order BLAS sums them in
TOLERANCE = 1e-5
ROOT = Path(__file__).resolve().parents[4]


def unit(v: np.ndarray) -> np.ndarray:
    return (v / np.linalg.norm(v, axis=-1, keepdims=True)).astype(np.float32)


def chat_vectors(seed: int, windows: int) -> np.ndarray:
    """A chat's windows: about one of a dozen subjects, in its own way, as conversations are; at
    the store's precision, so the exact search by hand sees the vectors the store holds."""
    subject = np.random.default_rng(seed % 12).standard_normal(DIM)
    rng = np.random.default_rng(seed)
    v = unit(subject + 0.7 * rng.standard_normal(DIM) + 0.7 * rng.standard_normal((windows, DIM)))
    return v.astype(VECTOR_DTYPE).astype(np.float32)


async def add_chat(store: SQLiteChatStore, vectors: np.ndarray) -> str:
    chat = (await store.create_chat(turns=make_turns(len(vectors) + 1))).chat
    windows = [
        EmbeddedWindow(MessageRange(start=i, end=i + 1), EmbeddedText(f"window {i}", v, EMBEDDER))
        for i, v in enumerate(vectors, start=1)
    ]
    await store.upsert_windows(chat.id, windows)
    return chat.id


def exact(chats: dict[str, np.ndarray], query: np.ndarray, count: int, texts: int) -> list[tuple[str, list[int]]]:
    """Today's exact float search, by hand: chats by their best window, each with its best windows."""
    best = []
    for chat_id, vectors in chats.items():
        sims = vectors @ query
        order = np.argsort(-sims, kind="stable")[:texts]
        best.append((float(sims[order[0]]), chat_id, [int(i) + 1 for i in order]))
    best.sort(key=lambda b: -b[0])
    return [(chat_id, starts) for _, chat_id, starts in best[:count]]


async def found(store: ChatStore, query: np.ndarray, count: int = 5, texts: int = 2) -> list[tuple[str, list[int]]]:
    matches = await store.search(EmbeddedText("q", query, EMBEDDER), count, texts)
    return [(m.chat_id, [t.ref.range.start for t in m.texts if t.ref.range]) for m in matches]


def queries(chats: dict[str, np.ndarray], n: int) -> list[np.ndarray]:
    """Requests near some chat's window, as a spoken request is near what was said."""
    rng = np.random.default_rng(99)
    every = np.concatenate(list(chats.values()))
    return [unit(every[rng.integers(len(every))] + 0.7 * unit(rng.standard_normal(DIM))) for _ in range(n)]


def index_file(store_path: Path) -> Path:
    return store_path.with_name(store_path.name + "-vectors")


@pytest.fixture
async def filled(tmp_path):
    """240 chats of 3-8 windows: more chats than a search decides exactly, so the file's
    Hamming ranking has to pick the right candidates."""
    path = tmp_path / "parla.db"
    chats: dict[str, np.ndarray] = {}
    async with SQLiteChatStore(path) as store:
        for seed in range(240):
            vectors = chat_vectors(seed, 3 + seed % 6)
            chats[await add_chat(store, vectors)] = vectors
    return path, chats


async def test_the_index_answers_as_the_exact_search(filled):
    path, chats = filled
    async with SQLiteChatStore(path) as store:
        for query in queries(chats, 40):
            assert await found(store, query) == exact(chats, query, 5, 2)
        # the similarities are the exact ones
        query = queries(chats, 1)[0]
        (best,) = await store.search(EmbeddedText("q", query, EMBEDDER), 1)
        assert best.texts[0].similarity == pytest.approx(float(np.max(chats[best.chat_id] @ query)), abs=TOLERANCE)


def crowded_vectors(seed: int, windows: int) -> np.ndarray:
    """A chat about one of only four subjects, told much as the others about it are: a store whose
    chats crowd a few subjects, as a heavy user's history does."""
    subject = np.random.default_rng(seed % 4).standard_normal(DIM)
    rng = np.random.default_rng(seed)
    v = unit(subject + 0.6 * rng.standard_normal(DIM) + 0.4 * rng.standard_normal((windows, DIM)))
    return v.astype(VECTOR_DTYPE).astype(np.float32)


async def crowded_store(path: Path) -> dict[str, np.ndarray]:
    """800 chats of four subjects, two windows each: each chat's vectors by its id."""
    chats: dict[str, np.ndarray] = {}
    async with SQLiteChatStore(path) as store:
        for seed in range(800):
            vectors = crowded_vectors(seed, 2)
            chats[await add_chat(store, vectors)] = vectors
    return chats


async def right_answers(store: ChatStore, chats: dict[str, np.ndarray]) -> int:
    """Of 20 queries, those answered as the exact search answers them."""
    return sum([await found(store, query) == exact(chats, query, 5, 2) for query in queries(chats, 20)])


async def test_the_shortlist_grows_with_the_chats_so_a_crowded_subject_keeps_its_best(tmp_path):
    """The right chats are among the 200 of the query's subject, which look alike by their signs: a
    shortlist of 20 misses them, one of a quarter of the chats does not."""
    chats = await crowded_store(tmp_path / "parla.db")
    right = {}
    for share in (0.0, 0.25):
        config = MemoryConfig(index_shortlist_min=20, index_shortlist_share=share)
        async with SQLiteChatStore(tmp_path / "parla.db", config) as store:
            right[share] = await right_answers(store, chats)
    assert right[0.0] < 10  # the set needs the shortlist to grow
    assert right[0.25] == 20


async def test_a_reopened_store_searches_its_file_without_a_rebuild(filled):
    path, chats = filled
    query = queries(chats, 1)[0]
    async with SQLiteChatStore(path) as store:
        await found(store, query)
    before = os.stat(index_file(path))
    async with SQLiteChatStore(path) as store:
        assert await found(store, query) == exact(chats, query, 5, 2)
    after = os.stat(index_file(path))
    assert (after.st_ino, after.st_mtime_ns, after.st_size) == (before.st_ino, before.st_mtime_ns, before.st_size)


async def test_a_deleted_chat_is_gone_from_the_index_and_its_file(filled):
    path, chats = filled
    query = queries(chats, 1)[0]
    async with SQLiteChatStore(path) as store:
        await found(store, query)
        gone = exact(chats, query, 1, 1)[0][0]
        await store.delete_chat(gone)
        vectors = chats.pop(gone)
        assert await found(store, query) == exact(chats, query, 5, 2)
    signs = index_file(path).read_bytes()
    assert all(bits.tobytes() not in signs for bits in sign_bits(vectors))
    codes = index_file(path).with_name(index_file(path).name + ".i8").read_bytes()
    scale = np.abs(vectors).max(axis=1, keepdims=True) / 127
    assert all(row.tobytes() not in codes for row in np.round(vectors / scale).astype(np.int8))


def run_child(path: Path, code: str) -> int:
    """Run `code` in another Python process with the store at `path` open as `store`."""
    script = (
        "import asyncio, os, signal, numpy as np\n"
        "from parla.memory.store.sqlite.store import SQLiteChatStore\n"
        "from tests.memory.store.sqlite.test_vector_file import *\n"
        "async def main():\n"
        f"    async with SQLiteChatStore({str(path)!r}) as store:\n"
        + "".join(f"        {line}\n" for line in code.splitlines())
    ) + "asyncio.run(main())\n"
    return subprocess.run([sys.executable, "-c", script], check=False, cwd=ROOT, timeout=60).returncode


@pytest.mark.tier("process")
async def test_a_write_from_another_process_is_searched_at_once(filled, tmp_path):
    path, chats = filled
    query = queries(chats, 1)[0]
    np.save(tmp_path / "q.npy", query)
    async with SQLiteChatStore(path) as store:
        await found(store, query)
        built = os.stat(index_file(path)).st_ino
        # another process adds a chat right on the query, and searches (updating the file)
        code = f"q = np.load({str(tmp_path / 'q.npy')!r})\nawait add_chat(store, q[None])\nawait found(store, q)"
        assert run_child(path, code) == 0
        ((top, starts),) = await found(store, query, 1, 1)
        assert top not in chats and starts == [1]
        assert os.stat(index_file(path)).st_ino == built  # updated in place, not rebuilt


# the process is killed at its first write to the files, or with every row written but the header
@pytest.mark.tier("process")
@pytest.mark.parametrize("killed_at", ["len(seen) > 1", "offset == 0"])
async def test_a_process_killed_while_updating_the_files_leaves_them_usable(filled, tmp_path, killed_at):
    path, chats = filled
    query = queries(chats, 1)[0]
    async with SQLiteChatStore(path) as store:
        await found(store, query)  # the files are built
    changed = exact(chats, query, 1, 1)[0][0]
    new = chat_vectors(1000, 4)
    np.save(tmp_path / "new.npy", new)
    # another process deletes a chat and adds one; its next search marks the deleted chat's rows
    # dead, appends the new chat's, and is killed (-9) before the header says so
    code = (
        f"await store.delete_chat({changed!r})\n"
        f"await add_chat(store, np.load({str(tmp_path / 'new.npy')!r}))\n"
        "real, seen = os.pwrite, []\n"
        "def pwrite(fd, data, offset):\n"
        "    seen.append(offset)\n"
        f"    if {killed_at}: os.kill(os.getpid(), signal.SIGKILL)\n"
        "    return real(fd, data, offset)\n"
        "os.pwrite = pwrite\n"
        "await found(store, np.zeros(256, np.float32) + 1)"
    )
    assert run_child(path, code) == -9
    del chats[changed]
    async with SQLiteChatStore(path) as store:
        new_id = next(c.id for c in await store.list_chats(limit=300) if c.id not in chats)
        chats[new_id] = new
        for q in queries(chats, 10):
            assert await found(store, q) == exact(chats, q, 5, 2)


async def test_an_index_that_cannot_be_written_is_a_store_error(tmp_path):
    path = tmp_path / "parla.db"
    async with SQLiteChatStore(path) as store:
        vectors = chat_vectors(1, 2)
        await add_chat(store, vectors)
        index_file(path).mkdir()  # where the file should be (a permission is no obstacle to root)
        with pytest.raises(StoreError, match="cannot keep the vector index"):
            await found(store, vectors[0])


async def test_files_a_third_dead_are_rewritten_with_the_live_rows_only(filled):
    path, chats = filled
    async with SQLiteChatStore(path) as store:
        await store.search(EmbeddedText("q", queries(chats, 1)[0], EMBEDDER), 1)  # the files are built
        before = os.stat(index_file(path))
        for chat_id in list(chats)[:100]:
            await store.delete_chat(chat_id)
            del chats[chat_id]
        for query in queries(chats, 5):
            assert await found(store, query) == exact(chats, query, 5, 2)
        after = os.stat(index_file(path))
    assert after.st_ino != before.st_ino and after.st_size < before.st_size * 2 / 3


async def test_a_deleted_chat_leaves_no_vector_in_the_store_file(tmp_path):
    path = tmp_path / "parla.db"
    vectors = chat_vectors(7, 3)
    async with SQLiteChatStore(path) as store:
        kept = await add_chat(store, chat_vectors(8, 3))
        gone = await add_chat(store, vectors)
        await store.delete_chat(gone)
        assert [m.chat_id for m in await store.search(EmbeddedText("q", vectors[0], EMBEDDER), 5)] == [kept]
    raw = path.read_bytes() + b"".join(p.read_bytes() for p in tmp_path.glob("parla.db-wal"))
    assert all(v.tobytes() not in raw for v in vectors)


async def test_a_store_closed_after_writing_leaves_the_index_up_to_date(tmp_path):
    """`parla import` then the daemon: the daemon's first search finds the files current."""
    path = tmp_path / "parla.db"
    vectors = chat_vectors(3, 4)
    async with SQLiteChatStore(path) as store:
        chat_id = await add_chat(store, vectors)  # no search: only the close builds the files
    built = os.stat(index_file(path))
    async with SQLiteChatStore(path) as store:
        assert await found(store, vectors[0], 1, 1) == [(chat_id, [1])]
    after = os.stat(index_file(path))
    assert (after.st_ino, after.st_mtime_ns, after.st_size) == (built.st_ino, built.st_mtime_ns, built.st_size)
