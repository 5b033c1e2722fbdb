"""The inspector's safety without a browser: the token on every request and in a header or form
field for every change, the Host checked, the headers that keep pages and addresses private, the
token file, and no token in any log line."""

from __future__ import annotations

import io
import logging
import os
import stat

import httpx
import pytest

from parla.daemon.memory_services import MemoryServices
from parla.ui.app import Inspector
from parla.ui.token import load_token
from tests.ui.conftest import TOKEN, ui_settings

pytestmark = pytest.mark.tier("fast")


async def test_every_request_needs_the_token_and_changes_need_it_twice(served, caplog):
    caplog.set_level(logging.DEBUG)
    # a handler on the root logger, as the daemon's log has, and uvicorn's access logger handing its
    # records to it, as it did in a whole test run (something in the process had reset it)
    logging.getLogger("uvicorn.access").propagate = True
    daemon_log = io.StringIO()
    root_handler = logging.StreamHandler(daemon_log)
    root_handler.addFilter(lambda r: not r.name.startswith(("httpx", "httpcore")))  # the test's client
    logging.getLogger().addHandler(root_handler)
    try:
        await _requests(served)
    finally:
        logging.getLogger().removeHandler(root_handler)
    assert TOKEN not in daemon_log.getvalue()
    # the test's own HTTP client logs its requests; the server logs none (uvicorn's access log would)
    server_side = [r for r in caplog.records if not r.name.startswith(("httpx", "httpcore"))]
    assert not [r for r in server_side if TOKEN in r.getMessage()]


async def _requests(served) -> None:
    japan = served.ids["japan"]
    rename = f"{served.url}chats/{japan}/rename"
    async with httpx.AsyncClient() as http:
        for url in (
            served.serving.address + "/",
            served.serving.address + f"/chats/{japan}",
            served.serving.address + "/static/htmx.min.js",
            served.serving.address + "/" + TOKEN[:-1] + "/",
            served.serving.address + "/" + TOKEN + "x/",
        ):
            refused = await http.get(url)
            assert refused.status_code == 403 and "Parla" not in refused.text, url
        page = await http.get(served.url)
        assert page.status_code == 200 and "Two weeks in Japan" in page.text
        assert "default-src 'self'" in page.headers["content-security-policy"]
        assert page.headers["referrer-policy"] == "no-referrer" and page.headers["cache-control"] == "no-store"
        assert (await http.get(served.url, headers={"Host": "evil.example:80"})).status_code == 403

        assert (await http.post(rename, data={"title": "no token"})).status_code == 403
        assert (await http.post(rename, data={"title": "wrong", "token": "x" * 46})).status_code == 403
        assert (await http.post(rename, data={"title": "by form", "token": TOKEN})).status_code == 303
        assert (await served.mem.store.get_chat(japan)).title == "by form"
        by_header = await http.post(rename, data={"title": "by header"}, headers={"X-Parla-Token": TOKEN})
        assert by_header.status_code == 303
    assert (await served.mem.store.get_chat(japan)).title == "by header"


def test_the_token_file_is_private_and_kept(tmp_path):
    path = tmp_path / "config" / "ui-token"
    token = load_token(path)
    assert len(token) >= 32 and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_token(path) == token
    os.chmod(path, 0o644)
    assert load_token(path) == token and stat.S_IMODE(path.stat().st_mode) == 0o600
    path.write_text("short\n")
    renewed = load_token(path)
    assert renewed != token and path.read_text().strip() == renewed


async def test_a_failure_parla_explains_is_its_line_on_the_page(served, tmp_path):
    # the Gemini embedder chosen without a key: the search cannot run, and the page says why
    mem = MemoryServices(ui_settings(tmp_path, embedder="gemini"), served.mem.store)
    transport = httpx.ASGITransport(app=Inspector(mem, TOKEN).app())
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
        listed = await http.get(f"/{TOKEN}/")
        failed = await http.get(f"/{TOKEN}/", params={"q": "the Japan trip"})
    assert listed.status_code == 200
    assert failed.status_code == 503 and "PARLA_EMBEDDER=gemini needs a Gemini API key" in failed.text
