"""Huge turns and long branches: `python -m bench.import_bounds [--quick] [--timeout S] [--markdown]`.
Prints its figures; asserts nothing.

- A huge turn: a ChatGPT export holding one user turn of N MB, imported by `parla import` in its
  own process (offline, a fresh SQLite store): its wall time and peak RSS. Two texts: prose (the
  synthetic corpus's sentences) and a run-on text (the same words without a full stop, one
  sentence of the whole turn: the worst case for rules that read sentences).
- A long branch: a ChatGPT conversation whose branch holds N messages; read (parsed and converted,
  what `parla import` does before storing) and imported, each in its own process.

Each size is compared with the smallest of the same run (`size x`, `time x`): a cost linear in the
size has the same two ratios. A run past `--timeout` is killed and shown as such. Run it on two
checkouts (each with its own environment) to compare a change; the load average beside each row
says how busy the machine was."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.corpus import chat_record
from bench.report import Table, parse

_UNIQUE = 4_000_000


@dataclass(frozen=True)
class Run:
    seconds: float
    peak_mb: float
    killed: bool
    returncode: int
    stdout: str
    stderr: str

    def cells(self, smallest: Run | None) -> list[str]:
        time_x = f"{self.seconds / smallest.seconds:.1f}" if smallest and not smallest.killed else ""
        shown = f"> {self.seconds:.0f} (killed)" if self.killed else f"{self.seconds:.1f}"
        return [shown, time_x, f"{self.peak_mb:.0f}", f"{os.getloadavg()[0]:.1f}"]


def run_child(
    args: list[str], folder: Path, timeout: float, address_space: int | None = None, feed: Iterable[bytes] = ()
) -> Run:
    """`python ARGS` in its own process on the folder's fresh store, killed after `timeout` s (and
    held to `address_space` bytes, when given), `feed` written to its stdin; its peak RSS as the
    kernel keeps it, read every 20 ms (growth in its last 20 ms may be missed)."""
    for suffix in ("", "-wal", "-shm", "-vectors", "-vectors.i8"):
        Path(f"{folder / 'parla.db'}{suffix}").unlink(missing_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PARLA_", "GEMINI_", "GOOGLE_"))}
    env.update(
        PARLA_STORE_PATH=str(folder / "parla.db"),
        PARLA_CONFIG_FILE=str(folder / "none.toml"),
        PARLA_CONTROL_SOCKET=str(folder / "ctl.sock"),
    )
    out, err = folder / "out.txt", folder / "err.txt"
    started = time.perf_counter()
    with out.open("w") as fout, err.open("w") as ferr:
        child = subprocess.Popen([sys.executable, *args], stdin=subprocess.PIPE, stdout=fout, stderr=ferr, env=env)
        if address_space:
            # set from here, not before the child starts (unsafe beside threads): it is still
            # importing Python's modules then
            resource.prlimit(child.pid, resource.RLIMIT_AS, (address_space, address_space))
        writer = threading.Thread(target=_write, args=(child, feed), daemon=True)
        writer.start()
        killed, peak_kb = False, 0
        while True:
            peak_kb = max(peak_kb, _high_water_kb(child.pid))
            pid, status = os.waitpid(child.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - started > timeout:
                child.kill()
                _, status = os.waitpid(child.pid, 0)
                killed = True
                break
            time.sleep(0.02)
    writer.join(5)
    seconds = time.perf_counter() - started
    code = os.waitstatus_to_exitcode(status)
    return Run(seconds, peak_kb / 1024, killed, code, out.read_text(), err.read_text())


def _high_water_kb(pid: int) -> int:
    """The process's peak resident memory so far (VmHWM, kept by the kernel), 0 once it has ended.
    Not wait4's ru_maxrss: that keeps the peak from before the child's exec, when it was a copy
    of this process, holding the file it is about to read."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    return next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:")), 0)


def _write(child: subprocess.Popen[bytes], feed: Iterable[bytes]) -> None:
    assert child.stdin is not None
    # the child may end before it has read it all
    with contextlib.suppress(BrokenPipeError), child.stdin:
        for data in feed:
            child.stdin.write(data)


def measured(args: list[str], folder: Path, timeout: float) -> Run:
    """`run_child`, which must succeed unless it was killed."""
    run = run_child(args, folder, timeout)
    if run.returncode and not run.killed:
        raise SystemExit(f"{args} failed: {run.stderr[-2000:]}")
    return run


def _sentences(rng: random.Random) -> Iterator[str]:
    start = datetime(2025, 1, 1, tzinfo=UTC)
    n = 0
    while True:
        for turn in chat_record(rng, n, 40, start)["turns"]:
            yield turn["text"]
        n += 1


def turn_text(megabytes: float, run_on: bool, seed: int = 3) -> str:
    """Prose of `megabytes` MB from the corpus's turns (past 4 MB, the first 4 MB again);
    `run_on`: without a full stop, a question or an exclamation mark."""
    size = int(megabytes * 1_000_000)
    pieces, length = [], 0
    for said in _sentences(random.Random(seed)):
        if run_on:
            said = said.replace(".", "").replace("?", "").replace("!", "")
        pieces.append(said)
        length += len(said) + 1
        if length >= min(size, _UNIQUE):
            break
    text = " ".join(pieces)
    return (text * (size // len(text) + 1))[:size]


def _node(node_id: str, parent: str | None, role: str, text: str, at: float) -> dict[str, Any]:
    message = {
        "id": node_id,
        "author": {"role": role},
        "create_time": at,
        "content": {"content_type": "text", "parts": [text]},
        "metadata": {},
        "recipient": "all",
    }
    return {"id": node_id, "message": message, "parent": parent, "children": []}


def chatgpt_conversation(conversation_id: str, said: Iterable[tuple[str, str]]) -> dict[str, Any]:
    """A ChatGPT conversation whose branch says `said` ((role, text) in order, ChatGPT's roles)."""
    mapping: dict[str, Any] = {"root": {"id": "root", "message": None, "parent": None, "children": []}}
    parent = "root"
    for n, (role, text) in enumerate(said):
        mapping[f"n{n}"] = _node(f"n{n}", parent, role, text, 1_700_000_000 + n)
        mapping[parent]["children"].append(f"n{n}")
        parent = f"n{n}"
    return {"title": conversation_id, "create_time": 1_700_000_000, "mapping": mapping, "current_node": parent,
            "conversation_id": conversation_id}  # fmt: skip


def write_branch(path: Path, said: Iterable[tuple[str, str]]) -> None:
    """A ChatGPT export of one conversation whose branch says `said` ((role, text) in order)."""
    path.write_text(json.dumps([chatgpt_conversation(path.stem, said)]))


def write_tiny_messages(path: Path, size: int) -> int:
    """A ChatGPT export of about `size` bytes: one conversation of as many messages as fit, each
    as short as the format lets it be, the speakers taking turns; how many."""
    n, written = 0, 0
    with path.open("w") as f:
        f.write('[{"title": "tiny", "mapping": {')
        while written < size:
            role = ("user", "assistant")[n % 2]
            node = f'"{n:x}":{{"message":{{"author":{{"role":"{role}"}},"content":{{"parts":["x{n:x}"]}}}},"parent":"{n - 1:x}"}}'
            f.write(("," if n else "") + node)
            written += len(node) + 1
            n += 1
        f.write(f'}}, "current_node": "{n - 1:x}", "id": "tiny"}}]')
    return n


def write_expanding_zip(path: Path, compresslevel: int) -> None:
    """A ChatGPT export zip of about 1 MB whose `conversations.json` expands to 1 GiB: one
    conversation whose user turn is 1 GiB of one line said again and again."""
    opening, closing = json.dumps([chatgpt_conversation("bomb", [("user", "@TEXT@"), ("assistant", "Noted.")])]).split(
        "@TEXT@"
    )
    line = b"All work and no play makes Jack a dull boy. "
    block = line * ((1 << 20) // len(line))
    with (
        zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=compresslevel) as z,
        z.open("conversations.json", "w", force_zip64=True) as member,
    ):
        member.write(opening.encode())
        for _ in range(1 << 10):
            member.write(block)
        member.write(closing.encode())


def read_only(source: str) -> None:
    """What `parla import` does before it stores: read the export and convert each conversation."""
    from parla.memory.imports.reading import Export

    with Export(source) as export:
        for _ in export.chats():
            pass


IMPORT = ["-m", "parla.daemon", "-q", "import"]


def huge_turns(folder: Path, sizes: list[float], timeout: float) -> Table:
    table = Table(["text, MB", "size x", "s", "time x", "peak RSS MB", "load"], title="one huge user turn")
    for run_on in (False, True):
        smallest = None
        for mb in sizes:
            source = folder / f"turn-{mb:g}-{int(run_on)}.json"
            write_branch(source, iter([("user", turn_text(mb, run_on)), ("assistant", "Noted.")]))
            run = measured([*IMPORT, str(source)], folder, timeout)
            source.unlink()
            smallest = smallest or run
            table.row(f"{'run-on' if run_on else 'prose'}, {mb:g}", f"{mb / sizes[0]:.0f}", *run.cells(smallest))
    return table


def long_branches(folder: Path, sizes: list[int], timeout: float) -> Table:
    table = Table(["messages, step", "size x", "s", "time x", "peak RSS MB", "load"], title="one long branch")
    for step, args in (("read", ["-m", "bench.import_bounds", "--read"]), ("parla import", IMPORT)):
        smallest = None
        for count in sizes:
            source = folder / f"branch-{count}.json"
            said = (
                (("user", "assistant")[n % 2], f"Message {n} of a long chat, in a few words.") for n in range(count)
            )
            write_branch(source, said)
            run = measured([*args, str(source)], folder, timeout)
            smallest = smallest or run
            table.row(f"{count:,}, {step}", f"{count / sizes[0]:.0f}", *run.cells(smallest))
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the smaller sizes only")
    parser.add_argument("--timeout", type=float, default=600, help="seconds before a run is killed (default 600)")
    parser.add_argument("--read", metavar="FILE", help=argparse.SUPPRESS)  # the child of a branch's read
    if "--read" in sys.argv:
        read_only(parser.parse_args().read)
        return
    args, out = parse(parser)
    turn_sizes = [0.25, 1, 4] if args.quick else [0.25, 1, 4, 16, 200]
    branch_sizes = [10_000, 20_000, 40_000] if args.quick else [10_000, 20_000, 40_000, 200_000]
    with tempfile.TemporaryDirectory(prefix="parla-bench-bounds-") as name:
        out.table(huge_turns(Path(name), turn_sizes, args.timeout))
        out.table(long_branches(Path(name), branch_sizes, args.timeout))


if __name__ == "__main__":
    main()
