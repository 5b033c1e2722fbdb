"""The Live service's rules, per model family, through the real google-genai SDK and the Live
emulator: how each family is seeded and takes typed turns, 3.8's interrupting client turns and
asynchronous tools, transcripts that trail or interleave, message shapes (usage metadata, several
parts in one message, `interrupted` then turnComplete), quota refusals on the upgrade, the
connection's ten-minute life and resumption handles past their two hours."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from google.genai import errors, types
from websockets.exceptions import ConnectionClosed

from parla.records.turn import TokenUsage
from parla.voice.live.close_codes import close_code
from parla.voice.live.conversation import SessionEvent
from parla.voice.live.setup import connect_config
from tests.conftest import eventually, make_turns
from tests.peers.live_emulator import echo, resumable_echo, tone, typed_turn
from tests.voice.live.test_live import conversation, has_turns, new_chat, stored

pytestmark = pytest.mark.tier("fast")

GEMINI_3_8 = "gemini-3.8-live"
GEMINI_3_1 = "gemini-3.1-flash-live-preview"
GEMINI_2_5 = "gemini-2.5-flash-native-audio-preview-12-2025"


def on(voice_config, model: str, **settings):
    return voice_config.model_copy(update={"live_model": model, **settings})


async def test_gemini_3_1_is_seeded_through_the_history_config_and_typed_turns_go_as_realtime_text(
    live, live_client, voice_config, store
):
    earlier = make_turns(4)
    chat = await new_chat(store, earlier)
    live.script = echo
    async with conversation(live_client, on(voice_config, GEMINI_3_1), store, chat.id) as conv:
        conv.say("hello")
        await eventually(lambda: has_turns(store, chat.id, 6), what="the answer")
    conn = live.connections[0]
    assert conn.refused is None and len(live.connections) == 1
    assert conn.setup["history_config"] == {"initial_history_in_client_content": True}
    (seed,) = conn.of_kind("client_content")
    assert seed.seed and seed.body["turn_complete"] is True
    assert [(t["role"], t["parts"][0]["text"]) for t in seed.body["turns"]] == [(t.role, t.text) for t in earlier]
    assert conn.frames[0] is seed  # the history went before any realtime input
    assert conn.of_kind("realtime_input")[0].body == {"text": "hello"}
    assert (await stored(store, chat.id))[-2:] == [("user", "hello"), ("model", "You said hello.")]


async def test_gemini_3_1_refuses_client_content_outside_the_initial_history(live, live_client, voice_config):
    def turn(text: str) -> types.Content:
        return types.Content(role="user", parts=[types.Part(text=text)])

    async def closed_with(cfg, *sends) -> BaseException:
        with pytest.raises((errors.APIError, ConnectionClosed)) as failed:
            async with live_client.aio.live.connect(model=GEMINI_3_1, config=cfg) as session:
                for send in sends:
                    await send(session)
                async for _ in session.receive():
                    pass
        return failed.value

    seeded = connect_config(on(voice_config, GEMINI_3_1), "Be brief.", [], None, seeding=True)
    plain = connect_config(on(voice_config, GEMINI_3_1), "Be brief.", [], None)

    async def history(s):
        await s.send_client_content(turns=[turn("earlier")], turn_complete=True)

    async def open_history(s):
        await s.send_client_content(turns=[turn("earlier")], turn_complete=False)

    async def mid_session(s):
        await s.send_client_content(turns=turn("now"), turn_complete=True)

    async def realtime(s):
        await s.send_realtime_input(text="now")

    for cfg, sends, words in (
        (seeded, (history, mid_session), "only accepted as the initial history"),
        (plain, (mid_session,), "only accepted as the initial history"),
        (seeded, (open_history, realtime), "realtime input before the initial history"),
    ):
        error = await closed_with(cfg, *sends)
        assert close_code(error) == 1007 and words in str(error)


CLIENT_TURN = {"client_content": {"turns": [{"role": "user", "parts": [{"text": "Hi"}]}], "turn_complete": True}}


@pytest.mark.parametrize(
    ("model", "typed"),
    [(GEMINI_3_8, CLIENT_TURN), (GEMINI_2_5, CLIENT_TURN), (GEMINI_3_1, {"realtime_input": {"text": "Hi"}})],
)
async def test_a_typed_turn_goes_the_way_the_model_takes_it(live, live_client, voice_config, store, model, typed):
    chat = await new_chat(store)
    live.script = echo
    async with conversation(live_client, on(voice_config, model), store, chat.id) as conv:
        conv.say("Hi")
        await eventually(lambda: has_turns(store, chat.id, 2), what="the answer")
    ((kind, body),) = typed.items()
    assert [f.body for f in live.connections[0].of_kind(kind)] == [body]
    assert await stored(store, chat.id) == [("user", "Hi"), ("model", "You said Hi.")]


async def test_gemini_3_8_a_typed_turn_waits_until_the_reply_under_way_is_over(live, live_client, voice_config, store):
    chat = await new_chat(store)
    greeting = "Welcome back. Shall we go on with the Lisbon plans?"

    async def script(conn):
        await conn.complete_setup()
        await conn.reply(greeting, tone(0.6), paced=True)  # proactive: the model speaks first
        text = await typed_turn(conn)
        await conn.reply(f"You said {text}.", tone(0.05))
        await conn.closed.wait()

    live.script = script
    async with conversation(live_client, voice_config, store, chat.id) as conv:
        await eventually(lambda: conv.assembler.model_speaking, what="the model speaking")
        conv.say("Yes please")
        await eventually(lambda: has_turns(store, chat.id, 3), what="the answer")
    assert live.connections[0].cut_replies == 0
    history = (await store.load_history(chat.id)).full_history
    assert [(t.role, t.text, t.interrupted) for t in history] == [
        ("model", greeting, False),
        ("user", "Yes please", False),
        ("model", "You said Yes please.", False),
    ]


class Tools:
    """switch_chat (BLOCKING on 3.8) waits for the test to release it; recall (NON_BLOCKING,
    its result WHEN_IDLE) answers at once."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.calls: list[str] = []

    def declarations(self) -> list[types.FunctionDeclaration]:
        return [
            types.FunctionDeclaration(name=n, description=n, parameters_json_schema={"type": "object"})
            for n in ("switch_chat", "recall")
        ]

    async def call(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        self.calls.append(name)
        if name == "switch_chat":
            await self.release.wait()
            return {"switched_to": "Kitchen"}
        return {"pins": ["buy tomatoes"]}


async def test_gemini_3_8_a_non_blocking_call_runs_while_the_model_talks_and_its_result_waits_until_idle(
    live, live_client, voice_config, store
):
    chat = await new_chat(store)
    talk = "Let me look that up while we keep talking."

    async def script(conn):
        await conn.complete_setup()
        assert conn.behaviour("recall") == "NON_BLOCKING" and conn.behaviour("switch_chat") == "BLOCKING"
        await typed_turn(conn)
        await conn.tool_call({"id": "c1", "name": "recall", "args": {}})
        talking = asyncio.create_task(conn.reply(talk, tone(0.5), paced=True))
        frame = await conn.expect("tool_response")
        assert not talking.done(), "the answer should arrive while the model talks"
        assert frame.body["function_responses"][0].get("scheduling") == "WHEN_IDLE"
        assert await conn.answer_tool(frame, "You pinned buy tomatoes.", tone(0.05))
        assert talking.done() and talking.result(), "a WHEN_IDLE result cut the reply off"
        await conn.closed.wait()

    live.script = script
    async with conversation(live_client, voice_config, store, chat.id, tools=Tools()) as conv:
        conv.say("What did I pin?")
        await eventually(lambda: has_turns(store, chat.id, 3), what="the talk and the result")
    assert await stored(store, chat.id) == [
        ("user", "What did I pin?"),
        ("model", talk),
        ("model", "You pinned buy tomatoes."),
    ]


async def test_gemini_3_8_a_typed_turn_never_cancels_a_blocking_call(live, live_client, voice_config, store):
    chat = await new_chat(store)
    tools = Tools()

    async def script(conn):
        await conn.complete_setup()
        await conn.tool_call({"id": "c1", "name": "switch_chat", "args": {}})
        frame = await conn.expect("tool_response")  # new input would have cancelled the call
        await conn.answer_tool(frame, "Now in Kitchen.", tone(0.05))
        text = await typed_turn(conn)
        await conn.reply(f"You said {text}.", tone(0.05))
        await conn.closed.wait()

    live.script = script
    async with conversation(live_client, voice_config, store, chat.id, tools=tools) as conv:
        await eventually(lambda: tools.calls == ["switch_chat"], what="the call")
        conv.say("And the oven?")
        await asyncio.sleep(0.2)
        assert [t.text for t in conv.unsent()] == ["And the oven?"]  # held while the call runs
        tools.release.set()
        await eventually(lambda: has_turns(store, chat.id, 3), what="the answers")
    assert not any("toolCallCancellation" in m for m in live.connections[0].sent)
    assert await stored(store, chat.id) == [
        ("model", "Now in Kitchen."),
        ("user", "And the oven?"),
        ("model", "You said And the oven?."),
    ]


async def test_late_and_interleaved_transcripts_go_to_their_own_turns(live, live_client, voice_config, store):
    chat = await new_chat(store)

    async def script(conn):
        await conn.complete_setup()
        await typed_turn(conn)
        await conn.reply("It is noon.", tone(0.1), transcript="none")  # turnComplete, no transcript yet
        await conn.heard(" And in Rome?")  # the user's next question...
        await conn.transcribe("It is noon.")  # ...before the last answer's transcript
        await conn.reply("One in the afternoon.", tone(0.1), transcript="late")
        await conn.closed.wait()

    live.script = script
    async with conversation(live_client, voice_config, store, chat.id) as conv:
        conv.say("What time is it?")
        await eventually(lambda: has_turns(store, chat.id, 4), what="both exchanges")
        await asyncio.sleep(0.2)
        assert not conv.assembler.model_speaking and not conv.assembler.in_progress
    assert await stored(store, chat.id) == [
        ("user", "What time is it?"),
        ("model", "It is noon."),
        ("user", "And in Rome?"),
        ("model", "One in the afternoon."),
    ]


async def test_words_transcribed_after_the_answer_they_got_are_stored_before_it(live, live_client, voice_config, store):
    chat = await new_chat(store)

    async def script(conn):
        await conn.complete_setup()
        await conn.reply("Sunny and warm.", tone(0.1))  # it answered speech not transcribed yet
        await conn.heard(" How is the weather?")
        await conn.closed.wait()

    live.script = script
    async with conversation(live_client, voice_config, store, chat.id):
        await eventually(lambda: has_turns(store, chat.id, 2), what="the exchange")
    assert await stored(store, chat.id) == [("user", "How is the weather?"), ("model", "Sunny and warm.")]


async def test_usage_metadata_several_parts_in_one_message_and_interrupted_then_turn_complete(
    live, live_client, voice_config, store
):
    chat = await new_chat(store)

    async def script(conn):
        await conn.complete_setup()
        await typed_turn(conn)
        await conn.usage(120, 0)
        await conn.model_audio(tone(0.05), tone(0.05, 660.0), transcript=" Two parts")
        await conn.content(outputTranscription={"text": " in one message"})
        await conn.interrupted()
        await conn.turn_complete()
        await conn.usage(120, 30)  # after the turn's end: the answer that just ended
        text = await typed_turn(conn)
        await conn.model_audio(tone(0.05), transcript=f"You said {text}.")
        await conn.usage(200, 12, cachedContentTokenCount=150, thoughtsTokenCount=4)
        await conn.turn_complete()
        await conn.closed.wait()

    live.script = script
    async with conversation(live_client, voice_config, store, chat.id) as conv:
        conv.say("hi")
        await eventually(lambda: has_turns(store, chat.id, 2), what="the cut answer")
        assert not conv.assembler.model_speaking
        conv.say("again")
        await eventually(lambda: has_turns(store, chat.id, 4), what="the next answer")
    history = (await store.load_history(chat.id)).full_history
    assert [(t.role, t.text, t.interrupted) for t in history] == [
        ("user", "hi", False),
        ("model", "Two parts in one message", True),
        ("user", "again", False),
        ("model", "You said again.", False),
    ]
    assert len(live.connections) == 1 and conv.status.reconnects == 0
    # each model turn keeps the tokens the service reported for it (the latest report of it)
    assert [t.usage for t in history] == [
        None,
        TokenUsage(prompt_tokens=120, response_tokens=30, total_tokens=150),
        None,
        TokenUsage(prompt_tokens=200, response_tokens=12, total_tokens=216, cached_tokens=150, thoughts_tokens=4),
    ]


async def test_an_http_429_on_the_upgrade_is_retried_and_named_as_quota(live, live_client, voice_config, store):
    chat = await new_chat(store)
    live.refuse_upgrades = [429]
    live.script = echo
    events: list[SessionEvent] = []
    async with conversation(live_client, voice_config, store, chat.id, on_event=events.append) as conv:
        conv.say("hello")
        await eventually(lambda: has_turns(store, chat.id, 2), what="the answer after the retry")
    assert live.upgrades_refused == [429] and len(live.connections) == 1
    (retry,) = [e.detail for e in events if e.kind == "reconnecting"]
    assert "HTTP 429" in retry and "quota" in retry


async def test_the_goaway_before_the_ten_minute_mark_reconnects_before_the_close(
    live, live_client, voice_config, store
):
    chat = await new_chat(store)
    live.time_scale = 600 / 1.0  # a connection lives one real second; its GoAway comes 0.1 s before

    live.script = resumable_echo
    async with conversation(live_client, voice_config, store, chat.id) as conv:
        conv.say("one")
        second = await live.wait_connections(2, timeout=3)
        conv.say("two")
        await eventually(lambda: has_turns(store, chat.id, 4), what="both exchanges")
    assert second.handle == "h0"
    assert conv.status.reconnects == 0 and conv.status.last_error is None  # left before the close
    assert await stored(store, chat.id) == [
        ("user", "one"),
        ("model", "You said one."),
        ("user", "two"),
        ("model", "You said two."),
    ]


async def test_a_handle_older_than_two_hours_is_refused_and_the_session_starts_fresh(
    live, live_client, voice_config, store
):
    chat = await new_chat(store)
    config = voice_config.model_copy(update={"resume_handle_max_age_s": 3 * 3600.0})  # the client tries it
    gate = asyncio.Event()

    async def script(conn):
        if conn.index > 0:
            return await resumable_echo(conn)
        await conn.complete_setup()
        await conn.resumption("h0")
        await conn.reply(f"You said {await typed_turn(conn)}.", tone(0.05))
        await gate.wait()
        await conn.drop()

    live.script = script
    async with conversation(live_client, config, store, chat.id) as conv:
        conv.say("one")
        await eventually(lambda: has_turns(store, chat.id, 2), what="the first exchange")
        live.advance(2 * 3600 + 1)
        gate.set()
        second = await live.wait_connections(2)
        conv.say("two")
        await eventually(lambda: has_turns(store, chat.id, 4), what="the exchange after the refusal")
    assert live.setups_refused == ["session resumption handle has expired"]
    assert second.handle is None
    (seed,) = [f for f in second.of_kind("client_content") if not f.body["turn_complete"]]
    assert [t["parts"][0]["text"] for t in seed.body["turns"]] == ["one", "You said one."]
    assert (await stored(store, chat.id))[2:] == [("user", "two"), ("model", "You said two.")]
