"""The `locked` scenario of `python -m bench.faults`: SIGTERM and kill -9 of `parla run` while
another program holds the SQLite store's write lock (`BEGIN IMMEDIATE`) and `say --wait` runs.

Each round, with the lock held: one `say` whose wait ends before the store can take its turns
(reported answered and kept aside), then another `say` still waiting when the daemon gets SIGTERM
(even rounds: it keeps what the store did not take and says so on its last line) or kill -9 (odd
rounds). The lock goes, the daemon starts again (it replays what was kept aside) and the store is
checked: every turn of a `say` reported answered is there exactly once (0 lost), the file passes
integrity_check, and nothing is left kept aside.
"""

from __future__ import annotations

import asyncio
import random
import signal
import sqlite3
from pathlib import Path
from typing import Any

from bench.faults_checks import Figures, check_exchanges
from bench.faults_daemon import Answers, LivePeers, daemon_environment, start_daemon
from parla.daemon.control import CommandError, DaemonNotRunning, send_command
from parla.memory.store.refused import RefusedTurns

SHUTDOWN_TIMEOUT_S = 4.0
SHUTDOWN_KEEP_S = 1.0


async def _say(socket: Path, text: str, wait: float) -> dict[str, Any] | None:
    """What `say --wait` reports; None when the daemon went away first (nothing reported)."""
    try:
        return await send_command(socket, "say", text=text, wait=wait, timeout=wait + 10)
    except (OSError, ValueError, DaemonNotRunning, CommandError):
        return None


async def locked_store_faults(
    folder: Path,
    kills: int,
    rng: random.Random,
    peers: LivePeers,
) -> Figures:
    db = folder / "parla.db"
    socket = folder / "run" / "ctl.sock"
    log = folder / "daemon.err"
    answers = Answers()
    peers.live.script = answers.script
    env = daemon_environment(
        folder,
        peers,
        socket,
        PARLA_SHUTDOWN_TIMEOUT_S=str(SHUTDOWN_TIMEOUT_S),
        PARLA_SHUTDOWN_KEEP_S=str(SHUTDOWN_KEEP_S),
    )
    kept_file = RefusedTurns(RefusedTurns.beside(db))
    figures = Figures("locked")
    reported: list[str] = []  # texts whose `say` reported answered
    counts = {"stored": 0, "kept": 0, "in flight": 0, "sigterm": 0, "kill": 0, "last line": 0}
    chat_id: str | None = None
    proc = await start_daemon(env, socket, log)
    try:
        while figures.kills < kills:
            figures.runs += 1
            status = await send_command(socket, "status")
            chat_id = chat_id or status["chat"]["id"]
            await send_command(socket, "talk")
            term = figures.kills % 2 == 0
            holder = sqlite3.connect(db, isolation_level=None)
            holder.execute("BEGIN IMMEDIATE")
            try:
                first = f"round {figures.runs}: kept while the store is locked"
                answer = await _say(socket, first, wait=1.5)
                if answer and answer["result"] == "answered":
                    reported.append(first)
                    counts["kept" if answer.get("kept") else "stored"] += 1
                else:
                    figures.problem(f"round {figures.runs}: the first say got {answer}")
                second = f"round {figures.runs}: in flight at the {'SIGTERM' if term else 'kill -9'}"
                waiting = asyncio.create_task(_say(socket, second, wait=30))
                await answers.wait(second, 15)
                await asyncio.sleep(rng.uniform(0.0, 1.0))
                log_size = log.stat().st_size
                proc.send_signal(signal.SIGTERM if term else signal.SIGKILL)
                await proc.wait()
                figures.kills += 1
                counts["sigterm" if term else "kill"] += 1
                answer = await waiting
                if answer and answer["result"] == "answered":
                    reported.append(second)
                    counts["in flight"] += 1
                    counts["kept" if answer.get("kept") else "stored"] += 1
            finally:
                holder.execute("ROLLBACK")
                holder.close()
            if term:
                last = log.read_bytes()[log_size:].decode().rstrip().splitlines()[-1:]
                if last and "are kept in" in last[0] and str(kept_file.path) in last[0]:
                    counts["last line"] += 1
                else:
                    figures.problem(f"round {figures.runs}: the SIGTERM's last line: {last}")
            proc = await start_daemon(env, socket, log)  # replays what was kept aside
            when = f"locked round {figures.runs} ({'SIGTERM' if term else 'kill -9'})"
            check_exchanges(db, chat_id, reported, figures, when, "reported")
            if kept_file.count():
                figures.problem(f"{when}: {kept_file.count()} turns still kept aside after the restart")
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
        await proc.wait()
    socket.unlink(missing_ok=True)
    figures.note = (
        f"{len(reported)} says reported answered ({counts['stored']} stored, {counts['kept']} kept aside and "
        f"replayed at the next start; {counts['in flight']} of them in flight at the signal); "
        f"{counts['sigterm']} SIGTERM ({counts['last line']} said on their last line what was kept), "
        f"{counts['kill']} kill -9 (shutdown_timeout_s {SHUTDOWN_TIMEOUT_S:g})"
    )
    return figures
