"""What the chat and memory tools' answers share: a moment in the user's words."""

from __future__ import annotations

from datetime import timedelta

import pytest

from parla.records.turn import utcnow
from parla.tools.answers import spoken_when

pytestmark = pytest.mark.tier("fast")


def test_spoken_when():
    now = utcnow()
    assert spoken_when(now, now) == "today"
    assert spoken_when(now - timedelta(days=1), now) == "yesterday"
    assert spoken_when(now - timedelta(days=3), now) == "3 days ago"
    assert spoken_when(now - timedelta(days=20), now) == "2 weeks ago"
    assert spoken_when(now.replace(year=2025, month=1, day=5), now) == "on 5 January 2025"
