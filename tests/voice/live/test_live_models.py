"""Live models through the real google-genai SDK and the Live emulator: an unknown or retired model
ends the conversation with the server's words, the setting and the replacement; each family's
setup arrives as the service expects it; the emulator refuses what each model refuses."""

from __future__ import annotations

import pytest
from google.genai import errors, types
from websockets.exceptions import ConnectionClosed

from parla.daemon.chat_memory import ChatMemory
from parla.memory.config import MemoryConfig
from parla.memory.store.refused import RefusedTurns
from parla.voice.errors import LiveSessionFailed
from parla.voice.live.close_codes import close_code
from parla.voice.live.conversation import LiveConversation
from parla.voice.live.setup import connect_config

pytestmark = pytest.mark.tier("fast")


async def test_a_retired_live_model_fails_with_the_setting_and_its_replacement(live, live_client, voice_config, store):
    chat = (await store.create_chat(title="old model")).chat
    config = voice_config.model_copy(update={"live_model": "gemini-2.5-flash-native-audio-preview-09-2025"})
    events = []
    async with LiveConversation(
        live_client,
        config,
        ChatMemory(store, MemoryConfig(), chat.id, RefusedTurns(RefusedTurns.beside(store.path))),
        on_event=events.append,
    ) as conversation:
        with pytest.raises(LiveSessionFailed) as failed:
            await conversation.wait()
    message = str(failed.value)
    # the server's words, cut at the 123 bytes a close reason holds
    assert "close 1008: models/gemini-2.5-flash-native-audio-preview-09-2025 is not found for API version v1" in message
    assert "is superseded" in message
    assert "set PARLA_LIVE_MODEL=gemini-3.8-live" in message
    assert len(live.connections) == 0  # refused at setup, and not tried again
    assert [e.kind for e in events] == ["gave_up"]


async def test_an_unknown_live_model_names_the_setting_and_the_default(live, live_client, voice_config, store):
    chat = (await store.create_chat(title="typo")).chat
    config = voice_config.model_copy(update={"live_model": "gemini-3.8-lvie"})
    async with LiveConversation(
        live_client, config, ChatMemory(store, MemoryConfig(), chat.id, RefusedTurns(RefusedTurns.beside(store.path)))
    ) as conversation:
        with pytest.raises(LiveSessionFailed, match=r"set PARLA_LIVE_MODEL to a model your key can use \(the default"):
            await conversation.wait()


def tools() -> list[types.FunctionDeclaration]:
    return [types.FunctionDeclaration(name=n, description=n) for n in ("switch_chat", "recall")]


@pytest.fixture
def received(live, live_client, voice_config):
    async def open_session(model: str, **setup) -> dict:
        config = voice_config.model_copy(update={"live_model": model})
        built = connect_config(config, "Be brief.", tools(), None, seeding=True).model_copy(update=setup)
        async with live_client.aio.live.connect(model=model, config=built):
            pass
        return live.connections[-1].setup

    return open_session


def behaviours(setup: dict) -> dict[str, str | None]:
    return {d["name"]: d.get("behavior") for d in setup["tools"][0]["function_declarations"]}


async def test_gemini_3_8_gets_each_tools_behaviour_on_the_wire(received):
    setup = await received("gemini-3.8-live")
    assert behaviours(setup) == {"switch_chat": "BLOCKING", "recall": "NON_BLOCKING"}
    assert "history_config" not in setup
    assert setup["generation_config"]["response_modalities"] == ["AUDIO"]
    assert not {"thinking_config", "enable_affective_dialog"} & set(setup["generation_config"])


async def test_gemini_3_1_seeds_through_the_history_config_on_the_wire(received):
    setup = await received("gemini-3.1-flash-live-preview")
    assert setup["history_config"] == {"initial_history_in_client_content": True}
    assert behaviours(setup) == {"switch_chat": None, "recall": None}


async def test_gemini_2_5_native_audio_gets_each_tools_behaviour(received):
    setup = await received("gemini-2.5-flash-native-audio-preview-12-2025")
    assert behaviours(setup) == {"switch_chat": "BLOCKING", "recall": "NON_BLOCKING"}


async def refused(received, model: str, **setup) -> BaseException:
    with pytest.raises((errors.APIError, ConnectionClosed)) as failed:
        await received(model, **setup)
    return failed.value


async def test_the_emulator_refuses_thinking_on_gemini_3_8_and_allows_it_on_extended_thinking(received):
    thinking = types.ThinkingConfig(thinking_level=types.ThinkingLevel.LOW)
    error = await refused(received, "gemini-3.8-live", thinking_config=thinking)
    assert close_code(error) == 1007 and "thinking_level is not supported" in str(error)
    setup = await received("gemini-3.8-live-extended-thinking", thinking_config=thinking)
    assert setup["generation_config"]["thinking_config"] == {"thinking_level": "LOW"}


@pytest.mark.parametrize(
    ("model", "setup", "words"),
    [
        ("gemini-3.8-live", {"enable_affective_dialog": True}, "enable_affective_dialog is not supported"),
        (
            "gemini-3.8-live",
            {"proactivity": types.ProactivityConfig(proactive_audio=False)},
            "proactive_audio cannot be disabled",
        ),
        ("gemini-3.8-live", {"response_modalities": [types.Modality.TEXT]}, "only the AUDIO response modality"),
        (
            "gemini-3.1-flash-live-preview",
            {"proactivity": types.ProactivityConfig(proactive_audio=True)},
            "proactive audio are not supported",
        ),
    ],
)
async def test_the_emulator_refuses_setup_fields_the_model_refuses(received, model, setup, words):
    error = await refused(received, model, **setup)
    assert close_code(error) == 1007 and words in str(error)


async def test_the_emulator_refuses_non_blocking_functions_on_gemini_3_1(received):
    non_blocking = types.Tool(
        function_declarations=[types.FunctionDeclaration(name="recall", behavior=types.Behavior.NON_BLOCKING)]
    )
    error = await refused(received, "gemini-3.1-flash-live-preview", tools=[non_blocking])
    assert close_code(error) == 1007 and "NON_BLOCKING function calls are not supported" in str(error)


async def test_the_emulator_refuses_google_search_beside_functions(received):
    functions = types.Tool(function_declarations=[types.FunctionDeclaration(name="recall")])
    search = types.Tool(google_search=types.GoogleSearch())
    error = await refused(received, "gemini-3.8-live", tools=[search, functions])
    assert close_code(error) == 1007 and "google_search cannot be combined with function declarations" in str(error)


async def test_transparent_resumption_is_not_offered_on_the_gemini_developer_api(live_client, voice_config):
    """Replaying only what the server did not consume needs `SessionResumptionConfig.transparent`
    (the server then reports lastConsumedClientMessageIndex). The SDK refuses it on the Gemini
    Developer API, the one Parla connects to with an API key; when this stops failing, the API
    offers it and Parla should use it."""
    cfg = connect_config(voice_config, "Be brief.", [], None)
    cfg.session_resumption = types.SessionResumptionConfig(transparent=True)
    with pytest.raises(ValueError, match="transparent parameter is only supported in Gemini Enterprise Agent"):
        async with live_client.aio.live.connect(model=voice_config.live_model, config=cfg):
            pass
