"""A chat too long to show whole: the page caps both histories and the text of each turn, with a
way to the rest, and a turn number no store can hold is refused, not a server error."""

from __future__ import annotations

import re

import httpx
import pytest

from parla.records.turn import Turn
from parla.ui.app import TURN_TEXT_SHOWN
from parla.ui.memory import HISTORY_PAGE

pytestmark = pytest.mark.tier("fast")


def _items(page: str, list_id: str) -> list[str]:
    listed = re.search(rf'<ol id="{list_id}"[^>]*>(.*?)</ol>', page, re.DOTALL)
    assert listed is not None
    return re.findall(r"<li[ >].*?</li>", listed[1], re.DOTALL)


async def test_the_model_history_and_each_turn_are_capped(served):
    # an uncompacted 5,000-turn chat rendered all of them in the model's column, and one 50 MB
    # turn made a 37 MB page (issue 25, item 16)
    huge = " ".join(f"w{i}" for i in range(150_000))
    turns = [Turn.of("user", f"line {i}") for i in range(1, 5001)] + [Turn.of("model", huge)]
    chat = (await served.mem.store.create_chat(title="Long", turns=turns)).chat
    async with httpx.AsyncClient(timeout=60) as http:
        page = (await http.get(f"{served.url}chats/{chat.id}")).text
        assert len(_items(page, "assistant-history")) == HISTORY_PAGE
        assert f"({5001 - HISTORY_PAGE} earlier ones are not)" in page
        assert len(page) < 200_000
        for list_id in ("full-history", "assistant-history"):
            last = _items(page, list_id)[-1]
            assert f"… all {len(huge):,} characters" in last and len(last) < TURN_TEXT_SHOWN + 400
        whole, same = re.findall(r'hx-get="([^"]*/turns/5001)"', page)
        assert whole == same
        expanded = await http.get(httpx.URL(served.url).join(whole))
        assert expanded.status_code == 200 and huge.strip() in expanded.text and "characters</a>" not in expanded.text
        everything = (await http.get(f"{served.url}chats/{chat.id}", params={"turns": "all"})).text
        assert len(_items(everything, "assistant-history")) == 5001


async def test_turn_numbers_no_store_holds_are_refused(served):
    # `before=99999999999999999999999` was a 500: SQLite cannot take the number (issue 25, item 14)
    japan = served.chat_url("japan")
    async with httpx.AsyncClient() as http:
        for url in (f"{japan}/turns?before=99999999999999999999999", f"{japan}/turns?before=²", f"{japan}/turns/²"):
            assert (await http.get(url)).status_code == 400, url
        assert (await http.get(f"{japan}/turns/99999999999999999999999")).status_code == 400
        assert (await http.get(f"{japan}/turns/999999")).status_code == 404
        assert (await http.get(f"{japan}/turns?before=3")).status_code == 200


async def test_the_chats_page_says_how_many_chats_wait_for_their_summaries(served):
    async with httpx.AsyncClient(timeout=60) as http:
        assert 'data-testid="summary-queue"' not in (await http.get(served.url)).text
        await served.mem.store.queue_summaries([served.ids["japan"]])
        await served.mem.store.settle_summary(served.ids["japan"], 60, "429 RESOURCE_EXHAUSTED")
        page = (await http.get(served.url)).text
    (line,) = re.findall(r'data-testid="summary-queue">([^<]*)<', page)
    assert line.startswith("Summaries: 1 chats waiting") and "(last: 429 RESOURCE_EXHAUSTED)" in line
