"""A turn's importance is scored once, where every store's writes of turns come in
(`memory.store.scoring`): a turn given without one is stored with the rules' score on every store,
a turn given with one keeps it, and a turn said while Supabase is away has the same score in this
device's copy and, once the outbox is sent, on the server."""

from __future__ import annotations

import pytest

from parla.memory.errors import WriteQueued
from parla.memory.language.importance import IMPORTANT, turn_importance
from parla.records.turn import Turn
from tests.conftest import copied_store, make_turns, send_queued

pytestmark = pytest.mark.tier("fast")


async def test_a_turn_given_without_importance_is_stored_with_the_rules_score(any_store):
    allergy = Turn.of("user", "I'm allergic to penicillin.")
    reply = Turn.of("model", "I'll remember that.")
    judged = Turn.of("user", "Nothing much today.", importance=8.0)  # a summarizer's score stands
    rules = [turn_importance(allergy), turn_importance(reply), 8.0]
    assert rules[0] >= IMPORTANT > rules[1]

    created = await any_store.create_chat(turns=[allergy])
    appended = await any_store.append_turns(created.chat.id, [reply, judged])

    assert [t.importance for t in [*created.turns, *appended.turns]] == rules
    assert [t.importance for t in await any_store.load_turns(created.chat.id)] == rules
    assert (await any_store.stats(created.chat.id)).important_turns == 2


@pytest.mark.tier("postgres")
async def test_a_turn_said_while_supabase_is_away_has_the_same_score_in_the_copy_and_on_the_server(supabase, tmp_path):
    daughter = Turn.of("user", "My daughter is called Ana and she turns six in May.")
    async with copied_store(supabase, tmp_path) as store:
        chat = (await store.create_chat(turns=make_turns(1))).chat
        supabase.shim.refuse()
        with pytest.raises(WriteQueued):
            await store.append_turns(chat.id, [daughter])
        (copied,) = await store.local.load_turns(chat.id, 2)
        supabase.shim.recover()
        await send_queued(store)
        (sent,) = await store.remote.load_turns(chat.id, 2)
    assert copied.id == sent.id == daughter.id
    assert copied.importance == sent.importance == turn_importance(daughter) >= IMPORTANT
