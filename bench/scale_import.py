"""`parla import` in a process of its own, measured (wall time, CPU time, peak RSS), with the
settings of a benchmark's store: for `bench.scale` and `bench.scale_supabase`."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path


def env_for(store: Path, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PARLA_", "GEMINI_", "GOOGLE_"))}
    env.update(
        PARLA_STORE_PATH=str(store),
        PARLA_EMBEDDER="offline",
        PARLA_SUMMARIZER="offline",
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / "config"),
        XDG_DATA_HOME=str(home / "data"),
    )
    return env


@dataclass(frozen=True)
class Run:
    """A child process's wall time, CPU time (its own and its threads') and peak RSS."""

    seconds: float
    cpu_s: float
    peak_mb: float


def run_measured(args: list[str], env: dict[str, str], what: str) -> Run:
    started = time.perf_counter()
    child = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    elapsed = time.perf_counter() - started
    if status:
        raise SystemExit(f"{what} failed: {child.stderr.read().decode() if child.stderr else status}")
    return Run(elapsed, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)


def run_import(jsonl: Path, env: dict[str, str], *flags: str) -> Run:
    """`parla import` in a process of its own (its settings in `env`)."""
    return run_measured(
        [str(Path(sys.executable).with_name("parla")), "import", str(jsonl), *flags], env, "parla import"
    )
