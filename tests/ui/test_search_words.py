"""The inspector's switch search names what matched as the guides do (`the description`, `turns
3-5`), not by the store's names for its texts (`summary_text`, `chunk 1-10`)."""

from __future__ import annotations

import re

import httpx
import pytest

pytestmark = pytest.mark.tier("fast")


async def test_what_matched_is_said_in_the_guides_words(served):
    # the page showed `summary_text` and `chunk 1-2` (issue 42, item 17)
    shown: list[str] = []
    async with httpx.AsyncClient() as http:
        for request in ("two weeks in Japan", "the trip to Kyoto and Nara with the rail pass", "sourdough starter"):
            page = (await http.get(served.url, params={"q": request})).text
            shown += re.findall(r'<span class="kind">([^<]*)</span>', page)
    assert shown
    words = re.compile(
        r"the (title|description|(chunk|meta) summary of turns \d+-\d+|facts of turns \d+-\d+)|turns? \d+(-\d+)?"
    )
    assert all(words.fullmatch(s) for s in shown), shown
    assert not [s for s in shown if re.fullmatch(r"turns (\d+)-\1", s)], shown  # one turn is `turn 1`
