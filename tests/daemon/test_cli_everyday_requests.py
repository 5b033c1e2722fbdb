"""The short everyday requests of issue 26 (item 4) that fell to `none` or `ambiguous` with the
right chat on top: on the exports' chats (a few turns each, known by their titles), offline, each
switches to its chat."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.tier("fast")

DATA = Path(__file__).parents[1] / "data" / "imports"

REQUESTS = [
    ("what did we say about my mom's birthday present", "Gift ideas for Mom's 60th birthday"),
    ("my plant is dying again, go to that chat", "My plant is dying"),
    ("the one where we fixed the python bug", "Fixing the python import bug"),
]


@pytest.fixture
def imported(parla):
    for export in ("chatgpt_conversations.json", "claude_conversations.json", "openwebui_chat_export.json"):
        parla("import", str(DATA / export))
    return parla


def test_short_everyday_requests_switch_to_their_chat(imported):
    for request, title in REQUESTS:
        found = json.loads(imported("search", request, "--json").stdout)
        assert (found["decision"], found["candidates"][0]["title"]) == ("switch", title), (request, found["reason"])
