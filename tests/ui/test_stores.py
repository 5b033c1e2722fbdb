"""The inspector works the same on both stores (on Supabase as the signed-in user, through RLS):
the list, the switch search, a chat page, and corrections through the memory API."""

from __future__ import annotations

import httpx
import pytest

from tests.ui.conftest import TOKEN, serve_sample, ui_settings

pytestmark = pytest.mark.tier("fast")


async def test_the_inspector_on_each_store(any_store, tmp_path):
    async with serve_sample(any_store, ui_settings(tmp_path)) as served, httpx.AsyncClient() as http:
        japan, store = served.ids["japan"], any_store
        listed = await http.get(served.url)
        assert listed.text.count('data-testid="chat-row"') == 4
        found = await http.get(served.url, params={"q": "the trip to Kyoto and Nara with the rail pass"})
        assert 'data-testid="decision">switch<' in found.text and found.text.count('data-testid="candidate"') >= 1
        assert found.text.index("Two weeks in Japan") < found.text.index("Sourdough starter")
        page = await http.get(served.chat_url("japan"))
        assert page.status_code == 200 and "Passport valid until March 2027" in page.text
        assert "&lt;script&gt;" in (await http.get(served.chat_url("xss"))).text

        [pin] = [p for p in await store.list_pins(japan) if p.content.startswith("Passport")]
        post = {"token": TOKEN}
        await http.post(f"{served.url}chats/{japan}/pins/{pin.id}/forget", data=post)
        assert [p.id for p in await store.list_pins(japan, forgotten=True)] == [pin.id]
        await http.post(f"{served.url}chats/{japan}/pins/{pin.id}/restore", data=post)
        assert await store.list_pins(japan, forgotten=True) == []
        [block, *_] = [b for b in await store.list_facts(japan) if b.lines]
        line = block.lines[0]
        await http.post(
            f"{served.url}chats/{japan}/facts/forget", data={**post, "range": str(block.range), "line": line}
        )
        assert line in next(b for b in await store.list_facts(japan) if b.range == block.range).forgotten
        await http.post(
            f"{served.url}chats/{japan}/facts", data={**post, "range": str(block.range), "line": "Rail pass bought"}
        )
        assert "Rail pass bought" in next(b for b in await store.list_facts(japan) if b.range == block.range).lines
        renamed = await http.post(f"{served.url}chats/{japan}/rename", data={**post, "title": "Japan, April"})
        assert renamed.status_code == 303 and (await store.get_chat(japan)).title == "Japan, April"
        done = await http.post(
            f"{served.url}chats/{japan}/regenerate", data={**post, "range": "1-2"}, follow_redirects=True
        )
        assert "Regenerated 1 chunk summaries" in done.text
