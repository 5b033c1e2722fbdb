"""Fault suite: `python -m bench.faults [--quick] [--kills N] [--seed S]`. Prints its figures.

kill -9 at random moments of three processes, each run again after every kill:
- import: `parla import` of a synthetic corpus (storing the chats, then summarising them), killed
  and run again until a run completes, on a fresh store each round;
- compaction: `parla memory regenerate` of a long chat;
- live: `parla run` (its own process) talking to the Live emulator, typed `say` turns sent over
  the control socket, each answered by voice;
- locked: SIGTERM and kill -9 of `parla run` while another program holds the store's write lock
  and `say --wait` runs (bench.faults_locked).
After every kill the store is checked from outside: `PRAGMA integrity_check`; every turn that was
acknowledged before the kill is there (import: a chat once seen stored, and every chat when a run
completes; compaction: every turn of the chat; live: each exchange the daemon reported stored,
`unsaved_turns` 0 after its answer); no turn is there twice; the chat's memory is consistent (its
summary and fact ranges lie inside the chat and do not overlap) and a compaction run in this
process succeeds on it (for import: the next run, which summarises every chat, succeeds).

hostile (no kills): `parla import` of the files that took it down (JSON nested 100,000 deep, a zip
whose one turn expands to 1 GiB, a 200 MB turn, a branch of 200,000 messages), each within its
time, the first three within 100-200 MB of an ordinary import (bench.faults_hostile).

flood (no kills): `parla run` limited to 1,024 files while another user holds 1,100 idle TCP
connections to its inspector and 128 half-open clients on its control socket, opening each again
when the daemon closes it: `status` must answer within 1 s throughout, the inspector's page must
come, and the log must grow by less than 1 MB.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from bench.corpus import write_jsonl
from bench.faults_checks import Exchange, Figures, check_exchanges, check_store, compare, stored_turns
from bench.faults_daemon import Answers, LivePeers, daemon_environment, environment, start_daemon, with_live_peers
from bench.faults_flood import flood_suite
from bench.faults_hostile import hostile_imports
from bench.faults_locked import locked_store_faults
from bench.report import Report, Table, parse
from parla.daemon.control import send_command
from parla.daemon.memory_services import MemoryServices, open_memory
from parla.daemon.settings import Settings

# -- after a fault ----------------------------------------------------------------------------------


async def recompact(mem: MemoryServices, chat_ids: list[str], figures: Figures, when: str) -> None:
    for chat_id in chat_ids:
        try:
            await mem.compactor.compact(chat_id)
        except Exception as e:  # noqa: BLE001 - the figure is the point
            figures.memory_failures += 1
            figures.problem(f"{when}: compaction re-run of {chat_id[:8]} failed: {type(e).__name__}: {e}")


# -- processes ----------------------------------------------------------------------------------


def settings_for(folder: Path) -> Settings:
    return Settings(
        store_path=folder / "parla.db",
        summarizer="offline",
        embedder="offline",
        gemini_api_key=None,
        _env_file=None,  # type: ignore[call-arg]
    )


def _has_open(pid: int, path: Path) -> bool:
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        with suppress(OSError):
            if os.readlink(f"/proc/{pid}/fd/{fd}") == str(path):
                return True
    return False


@dataclass
class Run:
    returncode: int | None  # None: killed
    seconds: float  # from the store opening to the exit or the kill
    stdout: str
    stderr: str


async def run_parla(args: list[str], env: dict[str, str], db: Path, kill_after: float | None, log: Path) -> Run:
    """`parla ARGS` as its own process; with `kill_after`, SIGKILL that many seconds after it opened
    the store (unless it finished first)."""
    out, err = log.with_suffix(".out"), log.with_suffix(".err")
    with out.open("w") as fout, err.open("w") as ferr:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "parla.daemon", *args, env=env, stdout=fout, stderr=ferr
        )
        while proc.returncode is None and not _has_open(proc.pid, db):
            with suppress(TimeoutError):
                async with asyncio.timeout(0.01):
                    await proc.wait()
        opened = time.monotonic()
        try:
            async with asyncio.timeout(kill_after):
                await proc.wait()
            code: int | None = proc.returncode
        except TimeoutError:
            try:
                proc.kill()
                killed = True
            except ProcessLookupError:  # it exited between the timeout and the kill
                killed = False
            await proc.wait()
            code = None if killed else proc.returncode
    return Run(code, time.monotonic() - opened, out.read_text(), err.read_text())


def _remove_store(db: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)


# -- import ----------------------------------------------------------------------------------------


def _corpus_turns(path: Path) -> dict[str, list[Exchange]]:
    """Each chat of the file, keyed by its first turn's text (unique in the corpus)."""
    chats = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        turns = [(t["role"], t["text"]) for t in json.loads(line)["turns"]]
        chats[turns[0][1]] = turns
    return chats


def _check_import(db: Path, expected: dict[str, list[Exchange]], seen: set[str], figures: Figures, when: str) -> None:
    """Chats seen complete stay complete; none holds a turn twice or is stored twice."""
    check_store(db, figures, when)
    by_first: dict[str, list[list[Exchange]]] = {}
    for turns in stored_turns(db).values():
        if turns:
            by_first.setdefault(turns[0][1], []).append(turns)
    for first, copies in by_first.items():
        want = expected.get(first)
        if want is None:
            figures.duplicated += len(copies[0])
            figures.problem(f"{when}: a chat that is not in the corpus")
            continue
        for extra in copies[1:]:
            figures.duplicated += len(extra)
            figures.problem(f"{when}: chat {first[:30]!r} stored twice")
        lost, duplicated = compare(want, copies[0])
        figures.duplicated += duplicated
        if lost == 0:
            seen.add(first)
        elif first in seen:
            figures.lost += lost
            figures.problem(f"{when}: chat {first[:30]!r} lost {lost} turns it had")
    for first in seen - set(by_first):
        figures.lost += len(expected[first])
        figures.problem(f"{when}: chat {first[:30]!r} disappeared")


async def import_faults(
    folder: Path, kills: int, rng: random.Random, chats: int = 24, turns: tuple[int, int] = (20, 90)
) -> Figures:
    corpus = write_jsonl(folder / "chats.jsonl", chats, turns=turns, seed=rng.randint(0, 10**6))
    expected = _corpus_turns(corpus)
    assert len(expected) == chats, "the corpus needs a distinct first turn per chat"
    db = folder / "parla.db"
    env = environment(folder)
    figures = Figures("import")
    args = ["import", str(corpus), "--json"]
    baseline = await run_parla(args, env, db, None, folder / "baseline")
    if baseline.returncode != 0:
        raise RuntimeError(f"the import failed without a fault: {baseline.stderr[-2000:]}")
    duration = baseline.seconds
    while figures.kills < kills:
        _remove_store(db)
        seen: set[str] = set()
        for attempt in range(4):  # killed up to 3 times, then run to the end
            kill_after = rng.uniform(0, duration) if attempt < 3 and figures.kills < kills else None
            run = await run_parla(args, env, db, kill_after, folder / f"import-{figures.runs}")
            figures.runs += 1
            when = f"import run {figures.runs}"
            if run.returncode is None:
                figures.kills += 1
                _check_import(db, expected, seen, figures, f"{when} (killed at {run.seconds:.2f} s)")
                continue
            _check_import(db, expected, seen, figures, when)
            report = json.loads(run.stdout) if run.returncode == 0 else None
            if report is None or report["not_summarised"]:
                figures.memory_failures += 1
                figures.problem(f"{when}: exit {run.returncode}: {(run.stderr or run.stdout)[-300:]}")
            missing = set(expected) - seen
            figures.lost += sum(len(expected[f]) for f in missing)
            if missing:
                figures.problem(f"{when}: {len(missing)} chats missing after a complete run")
            figures.checked += sum(len(t) for t in expected.values())
            break
    return figures


# -- compaction ------------------------------------------------------------------------------------


async def compaction_faults(
    folder: Path,
    kills: int,
    rng: random.Random,
    mem: MemoryServices,
    chats: int = 2,
    turns: tuple[int, int] = (400, 500),
) -> Figures:
    corpus = write_jsonl(folder / "long.jsonl", chats, turns=turns, seed=rng.randint(0, 10**6))
    db = folder / "parla.db"
    env = environment(folder)
    setup = await run_parla(["import", str(corpus)], env, db, None, folder / "setup")
    if setup.returncode != 0:
        raise RuntimeError(f"the import failed: {setup.stderr[-2000:]}")
    expected = stored_turns(db)
    chat_ids = sorted(expected)
    figures = Figures("compaction")
    durations = {}
    for chat_id in chat_ids:
        run = await run_parla(["memory", "regenerate", chat_id], env, db, None, folder / "baseline")
        if run.returncode != 0:
            raise RuntimeError(f"regenerate failed without a fault: {run.stderr[-2000:]}")
        durations[chat_id] = run.seconds
    while figures.kills < kills:
        chat_id = rng.choice(chat_ids)
        run = await run_parla(
            ["memory", "regenerate", chat_id], env, db, rng.uniform(0, durations[chat_id]), folder / "regenerate"
        )
        figures.runs += 1
        when = f"regenerate run {figures.runs}"
        if run.returncode is None:
            figures.kills += 1
            when += f" (killed at {run.seconds:.2f} s)"
        elif run.returncode != 0:
            figures.memory_failures += 1
            figures.problem(f"{when}: exit {run.returncode}: {run.stderr[-300:]}")
        check_store(db, figures, when)
        now = stored_turns(db)
        for cid in chat_ids:
            lost, duplicated = compare(expected[cid], now.get(cid, []))
            figures.lost += lost
            figures.duplicated += duplicated
            figures.checked += len(expected[cid])
            if lost or duplicated:
                figures.problem(f"{when}: chat {cid[:8]}: {lost} lost, {duplicated} duplicated")
        await recompact(mem, [chat_id], figures, when)
    return figures


# -- live --------------------------------------------------------------------------------------------


async def _talk(
    socket: Path, answers: Answers, counter: list[int], acked: list[str], said: list[str], lag: list[float]
) -> None:
    """Typed turns one after another until the daemon goes away; a turn is acknowledged once its
    answer was sent and the daemon reports nothing unsaved (`lag`: seconds from the one to the other)."""
    while True:
        counter[0] += 1
        text = f"typed turn number {counter[0]}, remember it"
        said.append(text)
        await send_command(socket, "say", timeout=5, text=text)
        await answers.wait(text, 15)
        while (await send_command(socket, "status", timeout=5))["unsaved_turns"]:
            await asyncio.sleep(0.01)
        acked.append(text)
        lag.append(time.monotonic() - answers.answered[text])


async def live_faults(
    folder: Path,
    kills: int,
    rng: random.Random,
    mem: MemoryServices,
    peers: LivePeers,
) -> Figures:
    db = folder / "parla.db"
    socket = folder / "run" / "ctl.sock"
    answers = Answers()
    peers.live.script = answers.script
    env = daemon_environment(folder, peers, socket)
    figures = Figures("live")
    counter = [0]
    acked: list[str] = []
    said: list[str] = []
    lag: list[float] = []
    chat_id: str | None = None
    answered = answered_stored = unanswered = unanswered_stored = 0
    while figures.kills < kills:
        proc = await start_daemon(env, socket, folder / "daemon.err")
        figures.runs += 1
        status = await send_command(socket, "status")
        if chat_id is None:
            chat_id = status["chat"]["id"]
        elif status["chat"]["id"] != chat_id:
            figures.problem(f"the restarted daemon is in chat {status['chat']['id'][:8]}, not {chat_id[:8]}")
        talking = asyncio.create_task(_talk(socket, answers, counter, acked, said, lag))
        await asyncio.sleep(rng.uniform(0, 3.0))
        if talking.done():  # the daemon failed on its own: the figures say so
            figures.problem(f"the talk ended before the kill: {talking.exception()!r}")
        killed_at = time.monotonic()
        proc.kill()
        await proc.wait()
        figures.kills += 1
        talking.cancel()
        with suppress(BaseException):
            await talking
        when = f"live kill {figures.kills}"
        turns = check_exchanges(db, chat_id, acked, figures, when, "acknowledged")
        # Not acknowledged, so not counted as lost, but told: a turn whose answer was sent before
        # the kill while the daemon had not stored it yet, and one not answered yet.
        for text in (t for t in said if t not in acked):
            stored = ("user", text) in turns
            if answers.answered.get(text, killed_at + 1) <= killed_at:
                answered, answered_stored = answered + 1, answered_stored + stored
            else:
                unanswered, unanswered_stored = unanswered + 1, unanswered_stored + stored
        said[:] = [t for t in said if t in acked]
        await recompact(mem, [chat_id], figures, when)
    socket.unlink(missing_ok=True)
    lag.sort()
    figures.note = (
        f"in flight at a kill (not acknowledged): {answered} turns answered but not yet reported stored "
        f"({answered_stored} stored), {unanswered} not answered yet ({unanswered_stored} stored)"
    )
    if lag:
        figures.note += (
            f"; answer sent -> reported stored: median {lag[len(lag) // 2] * 1000:.0f} ms, "
            f"p95 {lag[int(len(lag) * 0.95)] * 1000:.0f} ms (n={len(lag)})"
        )
    return figures


# -- the suite -------------------------------------------------------------------------------------


def report(out: Report, all_figures: list[Figures], seconds: float) -> None:
    table = Table(
        ["scenario", "kills", "runs", "turns checked", "lost", "duplicated", "integrity failures", "memory failures"],
        title=f"kill -9 fault suite: {seconds:.0f} s",
    )
    for f in all_figures:
        table.row(f.scenario, f.kills, f.runs, f.checked, f.lost, f.duplicated, f.integrity_failures, f.memory_failures)
    out.table(table)
    for f in all_figures:
        for line in ([f.note] if f.note else []) + f.problems:
            out.line(f"{f.scenario}: {line}")


async def with_memory(folder: Path, work: Callable[[MemoryServices], Awaitable[Figures]]) -> Figures:
    async with open_memory(settings_for(folder)) as mem:
        return await work(mem)


async def run(kills: int, seed: int, scenarios: list[str]) -> list[Figures]:
    rng = random.Random(seed)
    root = Path(tempfile.mkdtemp(prefix="parla-bench-faults-"))
    os.environ["PARLA_CONFIG_FILE"] = str(root / "none.toml")  # this process's own compaction re-runs
    for name in scenarios:
        (root / name).mkdir()
    results = []
    if "import" in scenarios:
        results.append(await import_faults(root / "import", kills, rng))
    if "compaction" in scenarios:
        folder = root / "compaction"
        results.append(await with_memory(folder, lambda m: compaction_faults(folder, kills, rng, m)))
    if "live" in scenarios:
        live = root / "live"
        results.append(
            await with_live_peers(live, lambda p: with_memory(live, lambda m: live_faults(live, kills, rng, m, p)))
        )
    if "locked" in scenarios:
        locked = root / "locked"
        results.append(await with_live_peers(locked, lambda p: locked_store_faults(locked, kills, rng, p)))
    if "flood" in scenarios:
        results.append(await flood_suite(root))
    if "hostile" in scenarios:
        results.append(await hostile_imports(root))
    return results


SCENARIOS = ["import", "compaction", "live", "locked", "flood", "hostile"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5 kills per scenario instead of 50")
    parser.add_argument("--kills", type=int, help="kills per scenario")
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--scenario", action="append", choices=SCENARIOS, help="only this one (repeatable)")
    args, out = parse(parser)
    kills = args.kills or (5 if args.quick else 50)
    started = time.monotonic()
    figures = asyncio.run(run(kills, args.seed, args.scenario or SCENARIOS))
    report(out, figures, time.monotonic() - started)
    sys.exit(0 if all(f.ok for f in figures) else 1)


if __name__ == "__main__":
    main()
