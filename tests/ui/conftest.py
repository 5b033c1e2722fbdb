"""The inspector under test: the sample chats in a real store, served on a free port, and one
headless Debian chromium for the whole session, driven by Playwright.

Playwright's synchronous API runs in a thread of its own (it cannot run inside the tests' event
loop); a test hands it functions of a page (`await browser.run(fn)`), so the test's loop, which
serves the inspector and runs the daemon, stays free while the browser waits."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest

from parla.daemon.memory_services import MemoryServices
from parla.daemon.settings import Settings
from parla.memory.store.protocol import ChatStore
from parla.memory.store.sqlite.store import SQLiteChatStore
from parla.ui.app import Inspector
from parla.ui.server import Serving, serve_inspector
from tests.ui.sample import fill, small_config

T = TypeVar("T")
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# The flags that work headless in a container with no network (the browser must not call home).
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TOKEN = "t0k3n-" + "x" * 40


class BrowserThread:
    def __init__(self) -> None:
        from playwright.sync_api import expect, sync_playwright

        expect.set_options(timeout=10_000)
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="chromium")

        def start() -> Any:
            self._playwright = sync_playwright().start()
            return self._playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)

        self.browser = self._pool.submit(start).result()

    async def run(self, fn: Callable[[], T]) -> T:
        return await asyncio.wrap_future(self._pool.submit(fn))

    async def page(self) -> Any:
        """A new page in a fresh context; the page's script errors (a CSP refusal among them) are
        collected in `page.problems`."""

        def open_page() -> Any:
            page = self.browser.new_context().new_page()
            page.problems = []
            page.on("pageerror", lambda e: page.problems.append(str(e)))
            page.on("console", lambda m: m.type == "error" and page.problems.append(m.text))
            page.on("dialog", lambda d: (page.problems.append(f"dialog: {d.message}"), d.dismiss()))
            return page

        return await self.run(open_page)

    async def close_page(self, page: Any) -> None:
        await self.run(page.context.close)

    def close(self) -> None:
        def stop() -> None:
            self.browser.close()
            self._playwright.stop()

        self._pool.submit(stop).result()
        self._pool.shutdown()


@pytest.fixture(scope="session")
def browser() -> Iterator[BrowserThread]:
    if not shutil.which(CHROMIUM):
        pytest.skip("Debian's chromium is not installed (scripts/test.sh installs it)")
    thread = BrowserThread()
    yield thread
    thread.close()


def ui_settings(tmp_path, **values: Any) -> Settings:
    defaults = {
        "store_path": tmp_path / "parla.db",
        "summarizer": "offline",
        "embedder": "offline",
        "gemini_api_key": None,
        "ui_port": 0,
        "ui_token_file": tmp_path / "ui-token",
    }
    return Settings(_env_file=None, **{**small_config().model_dump(), **defaults, **values})  # type: ignore[call-arg]


@dataclass
class Served:
    serving: Serving
    mem: MemoryServices
    ids: dict[str, str]

    @property
    def url(self) -> str:
        return self.serving.url

    def chat_url(self, name: str) -> str:
        return f"{self.url}chats/{self.ids[name]}"


@asynccontextmanager
async def serve_sample(store: ChatStore, settings: Settings) -> AsyncIterator[Served]:
    """The sample chats in `store`, and the inspector over them (no daemon: nothing live)."""
    mem = MemoryServices(settings, store)
    ids = await fill(store, mem.embedder, settings)
    inspector = Inspector(mem, TOKEN)
    async with serve_inspector(inspector, 0, settings.ui_max_connections, settings.ui_request_timeout_s) as serving:
        yield Served(serving, mem, ids)


@pytest.fixture
async def served(tmp_path) -> AsyncIterator[Served]:
    async with SQLiteChatStore(tmp_path / "parla.db") as store, serve_sample(store, ui_settings(tmp_path)) as s:
        yield s
