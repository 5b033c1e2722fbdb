"""The memory tools against a real store and the offline embedder."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from parla.kernel.local_time import LocalClock
from parla.memory.context import load_context
from parla.memory.retrieval.recall import Recall
from parla.records.turn import Turn
from parla.tools.memories import ForgetArgs, MemoryTools, RecallArgs, RememberArgs
from parla.tools.registry import ToolRegistry
from tests.tools.test_chats import Session, travel_papers

pytestmark = pytest.mark.tier("fast")

# A Wednesday morning in Rome: relative dates in remembered facts are read from here.
SAID_AT = LocalClock("Europe/Rome", lambda: datetime(2026, 11, 25, 9, 30, tzinfo=UTC))


def memory_tools(store, embedder, config, session, clock=SAID_AT, languages=("en",)) -> MemoryTools:
    return MemoryTools(store, Recall(store, embedder, config), embedder, session, config, clock, languages)


async def setup(store, embedder, config, compactor):
    chat = await travel_papers(store, compactor)
    session = Session(chat.id)
    return memory_tools(store, embedder, config, session), session, chat


async def test_remember_and_recall_here_and_in_every_chat(store, embedder, config, compactor):
    tools, _session, chat = await setup(store, embedder, config, compactor)
    remembered = await tools.remember(RememberArgs(fact="The dog is called Miso", importance=8))
    assert remembered["result"] == "remembered"
    assert [(p.content, p.importance) for p in await store.list_pins(chat.id)] == [("The dog is called Miso", 8.0)]
    recalled = (await tools.recall(RecallArgs(query="what is the dog's name")))["matches"]
    assert {"chat_id": chat.id, "kind": "pin", "text": "(pinned) The dog is called Miso"} in recalled
    everywhere = await tools.recall(RecallArgs(query="passport expiry", all_chats=True))
    assert everywhere["matches"][0]["chat_id"] == chat.id and everywhere["matches"][0]["title"] == "Travel papers"


async def test_forget_takes_a_pin_or_a_fact_out_and_regeneration_keeps_it_out(store, embedder, config, compactor):
    tools, _, chat = await setup(store, embedder, config, compactor)
    chatter = [Turn.of("user" if i % 2 == 0 else "model", f"Packing note {i}: bring the charger.") for i in range(8)]
    await store.append_turns(chat.id, chatter)  # a whole chunk, so facts get extracted
    await compactor.compact(chat.id)
    (block,) = await store.list_facts(chat.id)
    assert any("4471" in line for line in block.lines)
    # recall says where each fact and summary comes from
    matches = (await tools.recall(RecallArgs(query="passport number 4471")))["matches"]
    assert any("4471" in m["text"] and m.get("turns") == str(block.range) for m in matches)
    await tools.remember(RememberArgs(fact="The dog is called Miso"))
    await tools.remember(RememberArgs(fact="My sister's birthday is on May 3"))
    await tools.remember(RememberArgs(fact="My sister's birthday party is at Luigi's"))
    await tools.remember(RememberArgs(fact="Dentist appointment on Friday at nine"))

    forgot = await tools.forget(ForgetArgs(item="the dentist appointment"))
    assert (forgot["result"], forgot["kind"], forgot["text"]) == (
        "forgotten",
        "pin",
        "Dentist appointment on Friday (Friday 27 November 2026) at nine",
    )
    assert "Dentist" not in str(await tools.recall(RecallArgs(query="dentist")))
    assert [p.content for p in await store.list_pins(chat.id, forgotten=True)] == [forgot["text"]]

    birthday = await tools.forget(ForgetArgs(item="my sister's birthday"))
    assert birthday["result"] == "ambiguous"
    assert set(birthday["candidates"]) == {
        "My sister's birthday is on May 3",
        "My sister's birthday party is at Luigi's",
    }
    assert (await tools.forget(ForgetArgs(item="my sister's birthday party is at luigi's")))["result"] == "forgotten"
    assert (await tools.forget(ForgetArgs(item="quantum chromodynamics lecture")))["result"] == "none"

    passport = next(line for line in block.lines if "4471" in line)
    assert (await tools.forget(ForgetArgs(item=passport)))["kind"] == "fact"
    await compactor.regenerate(chat.id, None)  # re-extraction must not bring the line back
    (block,) = await store.list_facts(chat.id)
    assert passport not in block.lines and block.forgotten == [passport]
    memory_block = (await load_context(store, chat.id, config)).render(include_tail=False)
    assert "Luigi" not in memory_block and "Dentist" not in memory_block and "Miso" in memory_block


async def test_a_fact_of_blanks_only_is_an_error_the_model_hears(store, embedder, config, compactor):
    tools, _session, chat = await setup(store, embedder, config, compactor)
    answer = await ToolRegistry(tools.tools()).call("remember", {"fact": "   "})
    assert "content" in answer["error"] and "unexpectedly" not in answer["error"]
    assert await store.list_pins(chat.id) == []


LYON_TRIP = [
    ("user", "We spent the weekend in Lyon with my brother."),
    ("model", "Lovely! Did you try the bouchons?"),
    ("user", "Yes, the best dinner was at Chez Mathilde, a tiny restaurant near the Saône."),
    ("model", "Chez Mathilde is a good find; their quenelles are famous."),
    ("user", "Then we took the train back on Sunday evening."),
    ("model", "I hope the trip home was easy."),
]


async def test_recall_finds_the_turn_that_names_it_by_its_words(store, embedder, config, compactor):
    tools, session, papers = await setup(store, embedder, config, compactor)
    trip = (await store.create_chat(turns=[Turn.of(r, t) for r, t in LYON_TRIP])).chat
    chatter = [Turn.of("user" if i % 2 == 0 else "model", f"What was that about the plan {i}?") for i in range(8)]
    await store.append_turns(papers.id, chatter)
    await compactor.compact(trip.id)
    found = await tools.recall(RecallArgs(query="What was the name of that restaurant in Lyon?", all_chats=True))
    # what was said, as the turn or in a window of turns, with when it was said
    named = next(m for m in found["matches"] if m["kind"] in ("turn", "turns") and "Chez Mathilde" in m["text"])
    first, _, last = named["turns"].partition("-")
    assert named["chat_id"] == trip.id and int(first) <= 3 <= int(last or first) and named["last_talked"] == "today"
    assert (
        "Yes, the best dinner was at Chez Mathilde" in named["text"]
        and named["title"]
        and named["said"].startswith("today (")
    )
    # in the chat the user is in, by words as well
    session.chat_id = trip.id
    here = await tools.recall(RecallArgs(query="the name of that restaurant in Lyon"))
    assert any(m["kind"] in ("turn", "turns") and "Chez Mathilde" in m["text"] for m in here["matches"])
    assert all(m["chat_id"] == trip.id and "title" not in m for m in here["matches"])
    assert len(here["matches"]) <= config.recall_results


async def test_remember_about_the_user_is_known_in_every_chat_and_forget_takes_it_out(
    store, embedder, config, compactor
):
    tools, session, chat = await setup(store, embedder, config, compactor)
    first = await tools.remember(
        RememberArgs(fact="The user's daughter goes to Maple Grove school", about_user=True, about="daughter's school")
    )
    assert first["known_in"] == "every chat" and await store.list_pins(chat.id) == []
    await tools.remember(
        RememberArgs(fact="The user's daughter now goes to Oak Hill school", about_user=True, about="daughter school")
    )
    session.switch((await store.create_chat(title="Dinner")).chat.id)
    shown = (await load_context(store, session.chat_id, config)).render()
    assert "Oak Hill" in shown and "Maple Grove" not in shown  # the newer one replaced it

    forgotten = await tools.forget(ForgetArgs(item="the user's daughter now goes to oak hill school"))
    assert forgotten == {
        "result": "forgotten",
        "kind": "profile",
        "text": "The user's daughter now goes to Oak Hill school",
    }
    assert "Oak Hill" not in (await load_context(store, session.chat_id, config)).render()
