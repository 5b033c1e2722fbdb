"""CLI start-up benchmark: `python -m bench.cli_startup [--runs N] [--markdown]`. Prints its figures; asserts nothing.

How long `parla` takes to start for commands that need neither the memory nor the cloud SDKs
(`--version`, `status --json` with no daemon, `config path`) and for those that only read the
SQLite store (`chats`, `stats`, `show`, `export`, `config show`: the store alone, no model SDK, no
embedder, no numpy), on a store holding the test's ChatGPT export; `search` without a daemon (the
store, the offline embedder and the search); the floor of any typer + pydantic-settings program
and a bare interpreter; and, to compare, earlier states made again in the same run: `parla chats`
run through `main` (the collector running while the modules load, nothing frozen, pydantic
looking for plugins: what the script arranges before it loads the command line) and loading
numpy and dateparser as the store once did, and `parla search` loading what the memory services
imported before they imported each part when first asked for (google-genai, dateparser, the
summarizers, compaction, the model's tools).
Then `search` through a running daemon (`parla run` in push-to-talk on a headless PulseAudio, with
the offline embedder), which answers with its warm index and embedder. Each figure is the best of N
runs after one unmeasured run (which writes the bytecode of Parla's modules, as installing a wheel
does: PYTHONDONTWRITEBYTECODE is dropped): wall time and the child's CPU time (user + system,
which a busy machine inflates less than wall time; through the daemon, the client's alone), and
both as a ratio to the floor."""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench.report import Table, parse
from parla.daemon.control import DaemonNotRunning, send_command
from tests.peers.pulse import PulseServer

# `parla chats` through `main` alone: the cyclic collector running while the modules load (as the
# script let it before), nothing frozen, and pydantic looking for plugins
CHATS_THROUGH_MAIN = "import sys, parla.daemon.cli as cli; sys.argv = ['parla', 'chats']; cli.main()"
# `parla chats` with the modules the store imported before it left them to the code that needs them
CHATS_AS_BEFORE = (
    "import sys, numpy, dateparser, parla.records.embedding, parla.memory.store.sqlite.vector_file;"
    "import parla.daemon.cli as cli; sys.argv = ['parla', 'chats']; cli.main()"
)
# `parla search` with what the memory services imported before they imported each part when asked
SEARCH_AS_BEFORE = (
    "import sys, google.genai, dateparser, parla.memory.compaction.compactor, parla.memory.summarizers.gemini,"
    " parla.tools.chats, parla.tools.memories, parla.tools.reminders; from parla.daemon.__main__ import script;"
    " sys.argv = ['parla', 'search', 'my sourdough starter']; script()"
)
SEARCH = ["-m", "parla.daemon", "search", "my sourdough starter"]
CASES = {
    "python -c pass (baseline)": ["-c", "pass"],
    "import typer, rich, pydantic_settings": ["-c", "import typer, rich.console, pydantic_settings"],
    "parla --version": ["-m", "parla.daemon", "--version"],
    "parla status --json (no daemon)": ["-m", "parla.daemon", "status", "--json"],
    "parla config path": ["-m", "parla.daemon", "config", "path"],
    "parla config show": ["-m", "parla.daemon", "config", "show"],
    "parla chats": ["-m", "parla.daemon", "chats"],
    "parla chats --json": ["-m", "parla.daemon", "chats", "--json"],
    "parla stats --json": ["-m", "parla.daemon", "stats", "--json"],
    "parla show CHAT": ["-m", "parla.daemon", "show", "Sourdough timing"],
    "parla export --all": ["-m", "parla.daemon", "export", "--all"],
    "parla chats, collecting while loading (before)": ["-c", CHATS_THROUGH_MAIN],
    "parla chats, loading numpy and dateparser (before)": ["-c", CHATS_AS_BEFORE],
    "parla search (embedder, no daemon)": SEARCH,
    "parla search, loading the SDK and compaction (before)": ["-c", SEARCH_AS_BEFORE],
}


def best_of(runs: int, args: list[str], env: dict[str, str]) -> tuple[float, float]:
    measure(args, env)  # writes the bytecode of what it imports, as installing a wheel does
    return min(measure(args, env) for _ in range(runs))


def measure(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([sys.executable, *args], env=env, capture_output=True, check=False, timeout=120)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


@contextmanager
def daemon(env: dict[str, str], folder: Path) -> Iterator[None]:
    """`parla run` on the benchmark's store, answering on its control socket: push-to-talk, so
    idle it holds no audio stream, on a headless PulseAudio (it needs an input device to start)."""
    pulse = PulseServer(folder / "pulse").start()
    process = subprocess.Popen(
        [sys.executable, "-m", "parla.daemon", "run"],
        env={
            **env,
            **pulse.env,
            "PARLA_ACTIVATION": "push_to_talk",
            "GEMINI_API_KEY": "bench-key-never-used-while-idle",
            "PARLA_LIVE_URL": "wss://127.0.0.1:9",
            "PARLA_UI_PORT": "0",
            "PARLA_UI_TOKEN_FILE": str(folder / "ui-token"),
        },
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while asyncio.run(_answers(Path(env["PARLA_CONTROL_SOCKET"]))) is False:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the daemon did not start")
            time.sleep(0.2)
        yield
        if process.poll() is not None:
            raise RuntimeError("the daemon stopped while measured: its figures are not the daemon's")
    finally:
        process.terminate()
        process.wait(timeout=30)
        pulse.stop()


async def _answers(socket: Path) -> bool:
    try:
        await send_command(socket, "status", timeout=2)
    except DaemonNotRunning:
        return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    args, out = parse(parser)
    runs = args.runs
    with tempfile.TemporaryDirectory() as folder:
        env = {
            **{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
            "PARLA_CONFIG_FILE": str(Path(folder) / "config.toml"),
            "PARLA_CONTROL_SOCKET": str(Path(folder) / "ctl.sock"),
            "PARLA_STORE_PATH": str(Path(folder) / "parla.db"),
            "PYTHONPATH": str(Path(__file__).resolve().parents[1]),
            "PARLA_EMBEDDER": "offline",  # the daemon's too, though it has a key
        }
        chats = Path(__file__).resolve().parents[1] / "tests/data/imports/chatgpt_conversations.json"
        subprocess.run(  # its summary line would land among the figures
            [sys.executable, "-m", "parla.daemon", "import", str(chats)],
            env=env,
            check=True,
            timeout=600,
            stdout=subprocess.DEVNULL,
        )
        best = {name: best_of(runs, args, env) for name, args in CASES.items()}
        with daemon(env, Path(folder)):
            best["parla search (through the daemon)"] = best_of(runs, SEARCH, env)
    base_cpu = best["python -c pass (baseline)"][1]
    floor_wall, floor_cpu = best["import typer, rich, pydantic_settings"]
    table = Table(
        ["command", "wall ms", "cpu ms", "cpu / python", "wall / floor", "cpu / floor"],
        title=f"CLI start-up, best of {runs} runs; load average {os.getloadavg()[0]:.1f}",
    )
    for name, (wall, cpu) in best.items():
        table.row(
            name,
            f"{wall * 1000:.0f}",
            f"{cpu * 1000:.0f}",
            f"{cpu / base_cpu:.1f}x",
            f"{wall / floor_wall:.2f}x",
            f"{cpu / floor_cpu:.2f}x",
        )
    out.table(table)


if __name__ == "__main__":
    main()
