"""The cross-chat probe (bench.profile_probe) as a regression test: it takes about a second."""

from __future__ import annotations

import pytest

from bench.profile_probe import FACTS, run

pytestmark = pytest.mark.tier("fast")


async def test_a_new_chat_knows_the_facts_said_once_in_other_chats_and_no_small_talk(tmp_path):
    result = await run(tmp_path)
    assert result.facts_known >= 19, result
    # each entry is a fact or one of its clauses ("I'm learning Japanese" / "I take lessons every
    # Tuesday evening"): none is anything else, and a fact gives at most two
    assert result.small_talk_in_profile == 0 and result.entries_outside_facts == 0, result
    assert result.profile_entries <= 2 * len(FACTS), result
    assert result.detector_false_positives == 0, result
