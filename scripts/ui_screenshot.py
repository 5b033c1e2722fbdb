"""Makes docs/inspector.png, the README's screenshot of the memory inspector: the invented chats of
the tests (tests/ui/sample.py) in a fresh SQLite store, compacted offline, the Japan chat's page
in headless chromium. Run from the repository: `PYTHONPATH=. python scripts/ui_screenshot.py`."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from parla.daemon.memory_services import MemoryServices
from parla.memory.store.sqlite.store import SQLiteChatStore
from parla.ui.app import Inspector
from parla.ui.server import serve_inspector
from tests.ui.conftest import TOKEN, BrowserThread, ui_settings
from tests.ui.sample import fill

OUT = Path(__file__).resolve().parents[1] / "docs" / "inspector.png"


async def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        settings = ui_settings(Path(folder))
        async with SQLiteChatStore(settings.store_path) as store:
            mem = MemoryServices(settings, store)
            ids = await fill(store, mem.embedder, settings)
            browser = BrowserThread()
            try:
                async with serve_inspector(Inspector(mem, TOKEN), 0) as serving:
                    page = await browser.page()

                    def shoot() -> None:
                        page.set_viewport_size({"width": 1400, "height": 1500})
                        page.goto(f"{serving.url}chats/{ids['japan']}", wait_until="load")
                        page.screenshot(path=str(OUT))

                    await browser.run(shoot)
            finally:
                browser.close()
    print(f"wrote {OUT}")


if __name__ == "__main__":
    asyncio.run(main())
