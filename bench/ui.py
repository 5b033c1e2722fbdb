"""Memory inspector benchmark: `python -m bench.ui [--turns 5000] [--runs 5]`. Prints its figures;
asserts nothing.

How long the chat page of a long chat takes: the server's answer (store reads, context, HTML)
over HTTP, and the whole load in headless chromium (navigation until the page's `load` event),
each the best and the median of N runs, next to a 50-turn chat measured in the same run. The page
shows the newest turns of the full history (earlier ones a page at a time); the page with every
turn (`?turns=all`) is measured too. The chats are stored and compacted
(offline summarizer and embedder) as Parla would leave them."""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import httpx

from bench.report import Report, Table, parse
from parla.daemon.memory_services import MemoryServices
from parla.daemon.settings import Settings
from parla.memory.store.sqlite.store import SQLiteChatStore
from parla.records.turn import Turn
from parla.ui.app import Inspector
from parla.ui.memory import HISTORY_PAGE
from parla.ui.server import serve_inspector
from tests.ui.conftest import BrowserThread
from tests.ui.sample import JAPAN, START

TOKEN = "bench-" + "x" * 40


def turns(n: int) -> list[Turn]:
    return [
        Turn.of(role, f"Message {i + 1}. {text}", created_at=START + timedelta(seconds=i))  # type: ignore[arg-type]
        for i, (role, text) in ((i, JAPAN[i % len(JAPAN)]) for i in range(n))
    ]


async def timed(fn, runs: int) -> tuple[float, float]:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        await fn()
        times.append(time.perf_counter() - started)
    return min(times), statistics.median(times)


async def main(out: Report, sizes: list[int], runs: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        settings = Settings(
            store_path=Path(folder) / "parla.db",
            summarizer="offline",
            embedder="offline",
            gemini_api_key=None,
            _env_file=None,  # type: ignore[call-arg]
        )
        async with SQLiteChatStore(settings.store_path) as store:
            mem = MemoryServices(settings, store)
            ids = {}
            for n in sizes:
                started = time.perf_counter()
                ids[n] = (await store.create_chat(title=f"{n} turns", turns=turns(n))).chat.id
                await mem.compactor.compact(ids[n])
                print(f"{n}-turn chat stored and compacted in {time.perf_counter() - started:.1f} s", file=sys.stderr)
            browser = BrowserThread()
            try:
                async with serve_inspector(Inspector(mem, TOKEN), 0) as serving, httpx.AsyncClient() as http:
                    page = await browser.page()
                    table = Table(
                        ["turns", "HTML bytes", "server ms", "chromium ms", "chromium / smallest"],
                        title=f"chat page load, best / median of {runs} runs",
                    )
                    base = None
                    for n, chat_id in ids.items():
                        for query, shows in (("", min(n, HISTORY_PAGE)), ("?turns=all", n)):
                            if query and n <= HISTORY_PAGE:
                                continue
                            url = f"{serving.url}chats/{chat_id}{query}"
                            size = len((await http.get(url)).content)
                            server = await timed(lambda url=url: http.get(url), runs)
                            shown = await timed(
                                lambda url=url: browser.run(lambda: page.goto(url, wait_until="load")), runs
                            )
                            count = await browser.run(lambda: page.locator("#full-history li:not(.more)").count())
                            assert count == shows, f"the page shows {count} turns, not {shows}"
                            base = base or shown[1]
                            label = f"{n} ({shows} shown)"
                            table.row(
                                label,
                                size,
                                f"{server[0] * 1000:.0f} / {server[1] * 1000:.0f}",
                                f"{shown[0] * 1000:.0f} / {shown[1] * 1000:.0f}",
                                f"{shown[1] / base:.1f}x",
                            )
                    out.table(table)
                    await browser.close_page(page)
            finally:
                browser.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=5)
    args, out = parse(parser)
    asyncio.run(main(out, [50, args.turns], args.runs))
