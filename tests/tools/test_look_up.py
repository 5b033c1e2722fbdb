"""Look-ups about the world, wired as the daemon wires them: the Live emulator's model calls
`look_up`, Parla asks the text model through the REST emulator with Google Search grounding, the
model speaks the answer, and the stored model turn keeps the pages it came from. Without a key, a
network or an answer in time, the model gets at once a short sentence to say instead."""

from __future__ import annotations

import asyncio
import socket
import time

import pytest

from parla.daemon.conversation import spoken_conversation
from parla.daemon.memory_services import open_memory
from parla.daemon.settings import Settings
from parla.records.turn import WebSource
from tests.conftest import eventually
from tests.daemon.test_switch import response_of
from tests.daemon.test_switch import settings_for as spoken_settings
from tests.peers.gemini_rest import urlsafe
from tests.peers.live_emulator import tone

pytestmark = pytest.mark.tier("audio")

PAGES = [("meteo.it", "https://www.meteo.it/meteo/torino-domani"), ("ilmeteo.it", "https://www.ilmeteo.it/torino")]
ANSWER = "Tomorrow in Turin: light rain in the morning, 9 to 14 degrees, dry from the afternoon."


def settings_for(live, gemini, tmp_path, **kw) -> Settings:
    update = {"embedder": "offline", "time_zone": "Europe/Rome", **kw}
    return Settings.model_validate(spoken_settings(live, gemini, tmp_path).model_dump() | update)


def asking(question: str, answers: list[dict], spoken: str | None = None):
    """A Live script: the user asks, the model calls look_up, then says `spoken` (default: the answer)."""

    async def script(conn):
        await conn.complete_setup()
        await conn.heard(question)
        await conn.tool_call({"id": "q1", "name": "look_up", "args": {"question": question}})
        answers.append(response_of(await conn.expect("tool_response", timeout=10)))
        await conn.reply(spoken or answers[-1].get("answer") or answers[-1]["say"], tone(0.2))
        await conn.closed.wait()

    return script


async def test_a_look_up_is_grounded_spoken_and_its_sources_kept_with_the_turn(
    pulse, live, gemini, live_certificate, tmp_path, monkeypatch
):
    monkeypatch.setenv("SSL_CERT_FILE", str(live_certificate[0]))
    gemini.ground(ANSWER, PAGES, queries=["meteo Torino domani"])
    answers: list[dict] = []
    live.script = asking("What's the weather tomorrow in Turin?", answers)
    async with open_memory(settings_for(live, gemini, tmp_path)) as mem:
        chat = (await mem.store.create_chat()).chat.id
        async with spoken_conversation(mem, chat):
            conn = await live.wait_connections(1)
            await eventually(lambda: _turns(mem, chat, 2), what="the exchange stored")
        history = (await mem.store.load_history(chat)).full_history

    # the setup declares look_up as a function, and no google_search beside the functions
    tools = conn.setup["tools"]
    assert not any("google_search" in t for t in tools)
    assert "look_up" in [d["name"] for t in tools for d in t.get("function_declarations") or []]
    # one grounded request on the text model, with the user's date and zone to read "tomorrow" by
    (request,) = gemini.calls(":generateContent")
    assert request.path.endswith("/models/gemini-3.5-flash-lite:generateContent")
    assert request.body["tools"] == [{"googleSearch": {}}]
    assert request.body["contents"][0]["parts"][0]["text"] == "What's the weather tomorrow in Turin?"
    assert "Europe/Rome" in request.body["systemInstruction"]["parts"][0]["text"]
    # the model hears the answer and the sites' names, as information only
    (answer,) = answers
    assert answer["result"] == "found" and answer["answer"] == ANSWER
    assert answer["sources"] == ["meteo.it", "ilmeteo.it"] and "never instructions" in answer["note"]
    # the spoken answer is stored with the pages it came from; the question has none
    question, spoken = history
    assert question.text == "What's the weather tomorrow in Turin?" and question.sources == []
    assert spoken.text == ANSWER
    assert spoken.sources == [
        WebSource(title=t, uri=f"https://vertexaisearch.cloud.google.com/grounding-api-redirect/{urlsafe(u)}")
        for t, u in PAGES
    ]


async def test_without_an_answer_in_time_the_model_says_it_cannot_look_things_up_now(
    pulse, live, gemini, live_certificate, tmp_path, monkeypatch
):
    monkeypatch.setenv("SSL_CERT_FILE", str(live_certificate[0]))
    gemini.hang_s = 5.0  # the service takes the request and does not answer
    answers: list[dict] = []
    live.script = asking("Who won last night?", answers)
    async with open_memory(settings_for(live, gemini, tmp_path, look_up_timeout_s=0.5)) as mem:
        chat = (await mem.store.create_chat()).chat.id
        async with spoken_conversation(mem, chat):
            started = time.monotonic()
            await eventually(lambda: answers, timeout=5, what="the look-up's answer")
            took = time.monotonic() - started
            await eventually(lambda: _turns(mem, chat, 2), what="the exchange stored")
        history = (await mem.store.load_history(chat)).full_history
    (answer,) = answers
    assert answer["result"] == "unavailable" and answer["say"].startswith("I can't look things up right now")
    assert took < 3.0  # bounded by the setting, not by the service
    assert history[-1].text.startswith("I can't look things up right now") and history[-1].sources == []


async def test_without_a_network_or_a_key_the_answer_comes_at_once(
    pulse, live, gemini, live_certificate, live_client, tmp_path, monkeypatch
):
    monkeypatch.setenv("SSL_CERT_FILE", str(live_certificate[0]))
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    nowhere = f"http://127.0.0.1:{closed.getsockname()[1]}"  # bound, never listening: refused
    offline: list[dict] = []
    live.script = asking("Is the pharmacy open now?", offline)
    settings = settings_for(live, gemini, tmp_path, model_retries=0).model_copy(update={"gemini_base_url": nowhere})
    async with open_memory(settings) as mem:
        chat = (await mem.store.create_chat()).chat.id
        async with spoken_conversation(mem, chat, client=live_client):
            await eventually(lambda: offline, timeout=5, what="the look-up's answer offline")
    closed.close()

    keyless: list[dict] = []
    live.script = asking("Is the pharmacy open now?", keyless)
    no_key = settings_for(live, gemini, tmp_path).model_copy(update={"gemini_api_key": None})
    async with open_memory(no_key) as mem:
        chat = (await mem.store.create_chat()).chat.id
        async with spoken_conversation(mem, chat, client=live_client):
            await eventually(lambda: keyless, timeout=5, what="the look-up's answer with no key")

    assert offline[0]["result"] == "unavailable" and "could not reach the API" in offline[0]["why"]
    assert keyless[0]["result"] == "unavailable" and "GEMINI_API_KEY" in keyless[0]["why"]
    assert gemini.calls(":generateContent") == []


async def _turns(mem, chat_id, n):
    await asyncio.sleep(0)
    return (await mem.store.get_chat(chat_id)).turn_count >= n
