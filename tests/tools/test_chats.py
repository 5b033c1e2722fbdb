"""The chat tools against a real store and the offline embedder."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from parla.kernel.local_time import LocalClock
from parla.memory.context import load_context
from parla.memory.retrieval.search import ChatSearch
from parla.records.turn import Turn, utcnow
from parla.tools.chats import (
    ChatTools,
    DeleteChatArgs,
    ForgetArgs,
    ListChatsArgs,
    NewChatArgs,
    RecallArgs,
    RememberArgs,
    RenameArgs,
    spoken_when,
)
from parla.tools.registry import ToolRegistry

pytestmark = pytest.mark.tier("fast")


# A Wednesday morning in Rome: relative dates in remembered facts are read from here.
SAID_AT = LocalClock("Europe/Rome", lambda: datetime(2026, 11, 25, 9, 30, tzinfo=UTC))


class Session:
    """The conversation side of the tools: which chat, and the switches asked for."""

    def __init__(self, chat_id: str) -> None:
        self.chat_id = chat_id
        self.switches: list[str] = []
        self.switching = False  # a switch here happens at once

    def switch(self, chat_id: str) -> None:
        self.switches.append(chat_id)
        self.chat_id = chat_id


async def setup(store, embedder, config, compactor):
    turns = [
        Turn.of("user", "My passport number ends in 4471 and expires in March 2027."),
        Turn.of("model", "Noted: passport ending 4471, valid until March 2027."),
    ]
    chat = (await store.create_chat(title="Travel papers", turns=turns)).chat
    await compactor.compact(chat.id)
    session = Session(chat.id)
    tools = ChatTools(store, ChatSearch(store, embedder, config), embedder, session, config, SAID_AT)
    return tools, session, chat


async def test_remember_recall_rename_list_and_new_chat(store, embedder, config, compactor):
    tools, session, chat = await setup(store, embedder, config, compactor)
    remembered = await tools.remember(RememberArgs(fact="The dog is called Miso", importance=8))
    assert remembered["result"] == "remembered"
    assert [(p.content, p.importance) for p in await store.list_pins(chat.id)] == [("The dog is called Miso", 8.0)]
    recalled = (await tools.recall(RecallArgs(query="what is the dog's name")))["matches"]
    assert {"chat_id": chat.id, "kind": "pin", "text": "(pinned) The dog is called Miso"} in recalled
    everywhere = await tools.recall(RecallArgs(query="passport expiry", all_chats=True))
    assert everywhere["matches"][0]["chat_id"] == chat.id and everywhere["matches"][0]["title"] == "Travel papers"
    assert (await tools.rename_chat(RenameArgs(title="Passport and visas")))["title"] == "Passport and visas"
    new = await tools.new_chat(NewChatArgs(topic="Birthday party"))
    assert session.switches == [new["chat_id"]] and (await store.get_chat(new["chat_id"])).title == "Birthday party"
    listed = (await tools.list_chats(ListChatsArgs(limit=5)))["chats"]
    assert [(c["title"], c["current"]) for c in listed] == [("Birthday party", True), ("Passport and visas", False)]


def test_spoken_when():
    now = utcnow()
    assert spoken_when(now, now) == "today"
    assert spoken_when(now - timedelta(days=1), now) == "yesterday"
    assert spoken_when(now - timedelta(days=3), now) == "3 days ago"
    assert spoken_when(now - timedelta(days=20), now) == "2 weeks ago"
    assert spoken_when(now.replace(year=2025, month=1, day=5), now) == "on 5 January 2025"


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


async def test_delete_chat_asks_first_and_never_deletes_the_chat_the_user_is_in(store, embedder, config, compactor):
    tools, _session, chat = await setup(store, embedder, config, compactor)
    registry = ToolRegistry(tools.tools())
    here = await registry.call("delete_chat", {"chat_id": chat.id})
    assert here["result"] == "in_this_chat" and (await store.get_chat(chat.id)).id == chat.id
    await tools.new_chat(NewChatArgs(topic="Somewhere else"))
    asked = await registry.call("delete_chat", {"chat_id": chat.id})
    assert asked["result"] == "confirm" and "Travel papers" in asked["say"]
    assert (await store.get_chat(chat.id)).id == chat.id  # asking deletes nothing
    wrong = await registry.call("delete_chat", {"chat_id": chat.id, "confirmation": "made-up"})
    assert wrong["result"] == "confirm" and wrong["confirmation"] != asked["confirmation"]
    other = (await store.create_chat(title="Keep me")).chat
    crossed = await registry.call("delete_chat", {"chat_id": other.id, "confirmation": asked["confirmation"]})
    assert crossed["result"] == "confirm"  # a confirmation is for the chat it was asked about
    done = await registry.call("delete_chat", {"chat_id": chat.id, "confirmation": asked["confirmation"]})
    assert done["result"] == "deleted"
    assert [c.title for c in await store.list_chats()] == ["Keep me", "Somewhere else"]
    assert "error" in await registry.call("delete_chat", {"chat_id": chat.id, "confirmation": asked["confirmation"]})


async def test_a_delete_confirmation_is_used_once_and_lapses(store, embedder, config, compactor):
    tools, session, chat = await setup(store, embedder, config.model_copy(update={"delete_confirm_s": 0.05}), compactor)
    session.chat_id = (await store.create_chat()).chat.id
    asked = await tools.delete_chat(DeleteChatArgs(chat_id=chat.id))
    await asyncio.sleep(0.1)
    late = await tools.delete_chat(DeleteChatArgs(chat_id=chat.id, confirmation=asked["confirmation"]))
    assert late["result"] == "confirm" and (await store.get_chat(chat.id)).id == chat.id
    session.switching = True  # the user's words before a move are still being stored in the chat left
    moving = await tools.delete_chat(DeleteChatArgs(chat_id=chat.id, confirmation=late["confirmation"]))
    assert moving["result"] == "moving" and (await store.get_chat(chat.id)).id == chat.id


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
    await tools.new_chat(NewChatArgs(topic="Dinner"))
    shown = (await load_context(store, session.chat_id, config)).render()
    assert "Oak Hill" in shown and "Maple Grove" not in shown  # the newer one replaced it

    forgotten = await tools.forget(ForgetArgs(item="the user's daughter now goes to oak hill school"))
    assert forgotten == {
        "result": "forgotten",
        "kind": "profile",
        "text": "The user's daughter now goes to Oak Hill school",
    }
    assert "Oak Hill" not in (await load_context(store, session.chat_id, config)).render()
