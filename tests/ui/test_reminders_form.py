"""The inspector's reminder form without a browser: what it refuses, said on the page."""

from __future__ import annotations

import httpx
import pytest

from tests.ui.conftest import TOKEN

pytestmark = pytest.mark.tier("fast")


async def test_a_text_longer_than_the_bound_is_refused_on_the_page(served):
    """The form's input says maxlength, but a posted form is not bound by it: 20,000 characters
    (under the inspector's 64 KB form limit) were stored."""
    limit = served.mem.settings.reminder_max_chars
    async with httpx.AsyncClient(follow_redirects=True) as http:
        page = await http.post(
            f"{served.url}reminders/add", data={"text": "x" * 20_000, "when": "in 10 minutes", "token": TOKEN}
        )
        assert page.status_code == 200 and f"at most {limit} characters" in page.text
        assert f'maxlength="{limit}"' in page.text
    assert await served.mem.store.list_reminders() == []
