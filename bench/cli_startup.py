"""CLI start-up benchmark: `python -m bench.cli_startup [--runs N]`. Prints its figures; asserts nothing.

How long `parla` takes to start for commands that need neither the memory nor the cloud SDKs
(`--version`, `status --json` with no daemon, `config path`) and for those that only read the
SQLite store (`chats`, `stats`, `show`, `export`, `config show`: the store alone, no model SDK and
no embedder), on a store holding the test's ChatGPT export; next to `search` (which loads the
embedder), what every command loaded before the SDKs were imported lazily (`import
parla.daemon.memory_services`: google-genai, supabase, numpy), the floor of any typer +
pydantic-settings program, and a bare interpreter, all measured in the same run. Each figure is
the best of N runs: wall time and the child's CPU time (user + system, which a busy machine
inflates less than wall time), and both as a ratio to the floor."""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CASES = {
    "python -c pass (baseline)": ["-c", "pass"],
    "import typer, rich, pydantic_settings": ["-c", "import typer, rich.console, pydantic_settings"],
    "parla --version": ["-m", "parla.daemon", "--version"],
    "parla status --json (no daemon)": ["-m", "parla.daemon", "status", "--json"],
    "parla config path": ["-m", "parla.daemon", "config", "path"],
    "parla config show": ["-m", "parla.daemon", "config", "show"],
    "parla chats": ["-m", "parla.daemon", "chats"],
    "parla stats --json": ["-m", "parla.daemon", "stats", "--json"],
    "parla show CHAT": ["-m", "parla.daemon", "show", "Sourdough timing"],
    "parla export --all": ["-m", "parla.daemon", "export", "--all"],
    "parla search (embedder, no daemon)": ["-m", "parla.daemon", "search", "my sourdough starter"],
    "import parla.daemon.memory_services (before)": ["-c", "import parla.daemon.cli.support, daemon.memory_services"],
}


def measure(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([sys.executable, *args], env=env, capture_output=True, check=False, timeout=120)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory() as folder:
        env = {
            **os.environ,
            "PARLA_CONFIG_FILE": str(Path(folder) / "config.toml"),
            "PARLA_CONTROL_SOCKET": str(Path(folder) / "ctl.sock"),
            "PARLA_STORE_PATH": str(Path(folder) / "parla.db"),
            "PYTHONPATH": str(Path(__file__).resolve().parents[1]),
        }
        chats = Path(__file__).resolve().parents[1] / "tests/data/imports/chatgpt_conversations.json"
        subprocess.run([sys.executable, "-m", "parla.daemon", "import", str(chats)], env=env, check=True, timeout=600)
        best = {name: min(measure(args, env) for _ in range(runs)) for name, args in CASES.items()}
    base_cpu = best["python -c pass (baseline)"][1]
    floor_wall, floor_cpu = best["import typer, rich, pydantic_settings"]
    print(f"CLI start-up, best of {runs} runs; load average {os.getloadavg()[0]:.1f}")
    print(f"{'':44} {'wall ms':>8} {'cpu ms':>8} {'cpu/python':>11} {'wall/floor':>11} {'cpu/floor':>10}")
    for name, (wall, cpu) in best.items():
        print(
            f"{name:44} {wall * 1000:8.0f} {cpu * 1000:8.0f} {cpu / base_cpu:10.1f}x"
            f" {wall / floor_wall:10.2f}x {cpu / floor_cpu:9.2f}x"
        )


if __name__ == "__main__":
    main()
