"""A SQLite store Parla cannot open: every command (doctor included) ends at once with one line
naming the file and what to do, exit code 1, and no thread left to keep the process alive."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from parla.memory.store.sqlite.schema import MIGRATIONS
from parla.memory.store.sqlite.store import SQLiteChatStore

pytestmark = pytest.mark.tier("process")

ROOT = Path(__file__).resolve().parents[2]
# Root's power to ignore file permissions; without it root is held to the mode bits like any user.
PERMISSION_OVERRIDES = "-dac_override,-dac_read_search"


@pytest.fixture
def base() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="parla-broken-"))
    yield folder
    for path in folder.rglob("*"):
        if path.is_dir():
            path.chmod(0o700)
    shutil.rmtree(folder)


def _held_to_permissions() -> list[str]:
    """The command prefix that makes the commands meet the file modes as a user would.

    Root ignores permissions, so as root the commands run as root without the capabilities that
    override them (setpriv drops them from the bounding set, which an exec as root cannot regain).
    Staying root, not switching to another user, keeps them working wherever the interpreter, the
    virtualenv and this checkout are installed (a Python under a 0700 home folder, for one), and no
    permission outside the test's own folder is loosened."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.fail("running as root, this test needs setpriv (util-linux) to drop the permission overrides")
    return [setpriv, f"--bounding-set={PERMISSION_OVERRIDES}", "--inh-caps=-all", "--"]


def _parla(base: Path, store: Path, *args: str, held: bool = False) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "HOME": str(base),
        "PARLA_STORE_PATH": str(store),
        "PARLA_CONFIG_FILE": str(base / "none.toml"),
        "PARLA_CONTROL_SOCKET": str(base / "run" / "ctl.sock"),
    }
    for key in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "PARLA_GEMINI_API_KEY"):
        env.pop(key, None)
    prefix = _held_to_permissions() if held else []
    return subprocess.Popen(
        [*prefix, sys.executable, "-m", "parla.daemon", *args],
        env=env,
        cwd=base,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finished(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    try:
        out, err = process.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        pytest.fail(f"`{' '.join(process.args)}` hung on a store it cannot open")  # type: ignore[arg-type]
    return process.returncode, out, err


async def test_a_store_parla_cannot_open_is_one_line_and_exit_1(base):
    not_a_db = base / "notes" / "parla.db"
    not_a_db.parent.mkdir()
    not_a_db.write_text("shopping list: flour, eggs, a new sourdough starter\n" * 20)

    newer = base / "newer" / "parla.db"
    async with SQLiteChatStore(newer):
        pass
    with sqlite3.connect(newer) as raw:
        raw.execute("PRAGMA user_version = 99")

    read_only_empty = base / "read-only-empty"
    read_only_empty.mkdir()
    read_only_with_db = base / "read-only" / "parla.db"
    async with SQLiteChatStore(read_only_with_db) as store:
        await store.create_chat(title="kept")
    read_only_empty.chmod(0o500)
    read_only_with_db.parent.chmod(0o500)

    # started together: each one would hang today, and together they take the time of one
    cases = [
        (_parla(base, not_a_db, "stats"), str(not_a_db), "(file is not a database): move it aside"),
        (
            _parla(base, newer, "chats"),
            str(newer),
            f"has schema version 99, newer than this Parla knows ({len(MIGRATIONS)}): upgrade",
        ),
        (
            _parla(base, read_only_empty / "parla.db", "stats", held=True),
            str(read_only_empty / "parla.db"),
            f"Permission denied: make {read_only_empty} writable for you",
        ),
        (
            _parla(base, read_only_with_db, "stats", held=True),
            str(read_only_with_db),
            "(attempt to write a readonly database): make the file, its -wal and -shm files and its folder writable",
        ),
    ]
    doctor = _parla(base, not_a_db, "doctor")
    for process, path, message in cases:
        code, out, err = _finished(process)
        assert (code, out) == (1, ""), err
        assert err.startswith("parla: error: ") and path in err and message in err, err
        assert len(err.strip().splitlines()) == 1, err

    code, out, err = _finished(doctor)
    assert code == 1 and "Traceback" not in out + err
    (store_line,) = [line for line in out.splitlines() if line.startswith("FAIL store")]
    assert str(not_a_db) in store_line and "move it aside" in store_line
