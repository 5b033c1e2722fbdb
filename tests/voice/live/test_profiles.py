"""Live model profiles: which family a model id belongs to, and the setup built for each family
(tool behaviour stated per tool, history config only where the family seeds through it, no field
the family refuses)."""

from __future__ import annotations

import logging

import pytest
from google.genai import types

from parla.kernel.models import DEFAULT_LIVE_MODEL
from parla.voice.config import VoiceConfig
from parla.voice.live.profiles import (
    GEMINI_2_5_NATIVE_AUDIO,
    GEMINI_3_1_FLASH_LIVE,
    GEMINI_3_8_LIVE,
    GEMINI_3_8_LIVE_EXTENDED_THINKING,
    profile_for,
)
from parla.voice.live.setup import connect_config

pytestmark = pytest.mark.tier("fast")

TOOLS = ["switch_chat", "new_chat", "list_chats", "recall", "remember", "forget", "rename_chat", "some_new_tool"]


def declarations() -> list[types.FunctionDeclaration]:
    return [types.FunctionDeclaration(name=name, description=f"the {name} tool") for name in TOOLS]


@pytest.mark.parametrize(
    ("model", "profile"),
    [
        ("gemini-3.8-live", GEMINI_3_8_LIVE),
        ("models/gemini-3.8-live", GEMINI_3_8_LIVE),
        ("gemini-3.8-live-extended-thinking", GEMINI_3_8_LIVE_EXTENDED_THINKING),
        ("gemini-3.1-flash-live-preview", GEMINI_3_1_FLASH_LIVE),
        ("gemini-2.5-flash-native-audio-preview-12-2025", GEMINI_2_5_NATIVE_AUDIO),
        ("gemini-2.5-flash-native-audio-preview-09-2025", GEMINI_2_5_NATIVE_AUDIO),
    ],
)
def test_known_models_get_their_family(model, profile, caplog):
    with caplog.at_level(logging.WARNING, logger="parla.voice.live.profiles"):
        assert profile_for(model) is profile
    assert not caplog.records


def test_the_default_model_has_the_newest_profile():
    assert profile_for(DEFAULT_LIVE_MODEL) is GEMINI_3_8_LIVE


def test_an_unknown_model_gets_the_newest_profile_and_one_warning(caplog):
    with caplog.at_level(logging.WARNING, logger="parla.voice.live.profiles"):
        assert profile_for("gemini-9.9-live-someday") is GEMINI_3_8_LIVE
        assert profile_for("gemini-9.9-live-someday") is GEMINI_3_8_LIVE
    assert [r.getMessage() for r in caplog.records] == [
        "unknown Live model gemini-9.9-live-someday: assuming it behaves like gemini-3.8-live"
    ]


def behaviours(setup: types.LiveConnectConfig) -> dict[str, types.Behavior | None]:
    assert setup.tools is not None
    return {d.name: d.behavior for d in setup.tools[0].function_declarations or []}


@pytest.mark.parametrize("model", ["gemini-3.8-live", "gemini-3.8-live-extended-thinking"])
def test_gemini_3_8_setup_declares_each_tool_and_seeds_by_client_content(model):
    profile = profile_for(model)
    setup = connect_config(VoiceConfig(live_model=model), "Be brief.", declarations(), None, seeding=True)
    blocking, non_blocking = types.Behavior.BLOCKING, types.Behavior.NON_BLOCKING
    assert behaviours(setup) == {
        "switch_chat": blocking,  # must be done before the model speaks about it
        "new_chat": blocking,
        "list_chats": blocking,
        "recall": non_blocking,
        "remember": non_blocking,
        "forget": non_blocking,
        "rename_chat": non_blocking,
        "some_new_tool": blocking,  # unknown tools block: never left to the model's NON_BLOCKING default
    }
    assert setup.history_config is None and not profile.seed_turn_complete
    assert setup.thinking_config is None and setup.enable_affective_dialog is None and setup.proactivity is None
    assert setup.response_modalities == [types.Modality.AUDIO]
    assert profile.refused(setup) == []
    assert profile.typed_turns_via == "client_content" and profile.turn_complete_interrupts
    assert profile.default_behavior == types.Behavior.NON_BLOCKING  # hence every tool is declared


def test_gemini_3_1_setup_seeds_through_history_config_and_declares_no_async_tools():
    profile = profile_for("gemini-3.1-flash-live-preview")
    config = VoiceConfig(live_model="gemini-3.1-flash-live-preview")
    seeded = connect_config(config, "Be brief.", declarations(), None, seeding=True)
    assert seeded.history_config == types.HistoryConfig(initial_history_in_client_content=True)
    assert profile.seed_turn_complete  # closes the initial history without a model call
    assert set(behaviours(seeded).values()) == {None}  # synchronous calls only: no behaviour field
    assert profile.refused(seeded) == []
    resumed = connect_config(config, "Be brief.", declarations(), "handle-1", seeding=False)
    assert resumed.history_config is None  # a resumed session has its history on the server
    assert profile.typed_turns_via == "realtime_text"  # client content is refused mid-session
    assert profile.default_behavior == types.Behavior.BLOCKING


def test_gemini_2_5_setup_states_blocking_and_non_blocking_tools():
    profile = profile_for("gemini-2.5-flash-native-audio-preview-12-2025")
    setup = connect_config(VoiceConfig(live_model=profile.family), "Be brief.", declarations(), None, seeding=True)
    assert behaviours(setup)["switch_chat"] == types.Behavior.BLOCKING
    assert behaviours(setup)["recall"] == types.Behavior.NON_BLOCKING
    assert setup.history_config is None and profile.typed_turns_via == "client_content"
    assert not profile.turn_complete_interrupts


def test_function_responses_are_scheduled_by_their_tools_behaviour():
    def response(name: str) -> types.FunctionResponse:
        return types.FunctionResponse(id="c1", name=name, response={"ok": True})

    assert GEMINI_3_8_LIVE.function_response(response("recall")).scheduling == (
        types.FunctionResponseScheduling.WHEN_IDLE
    )
    assert GEMINI_3_8_LIVE.function_response(response("switch_chat")).scheduling is None  # BLOCKING: none
    assert GEMINI_3_1_FLASH_LIVE.function_response(response("recall")).scheduling is None  # all calls block


@pytest.mark.parametrize(
    ("profile", "field", "value"),
    [
        (GEMINI_3_8_LIVE, "thinking_config", types.ThinkingConfig(thinking_level=types.ThinkingLevel.LOW)),
        (GEMINI_3_8_LIVE, "enable_affective_dialog", True),
        (GEMINI_3_8_LIVE, "proactivity", types.ProactivityConfig(proactive_audio=False)),
        (GEMINI_3_8_LIVE, "response_modalities", [types.Modality.TEXT]),
        (GEMINI_3_8_LIVE_EXTENDED_THINKING, "enable_affective_dialog", True),
        (GEMINI_3_1_FLASH_LIVE, "proactivity", types.ProactivityConfig(proactive_audio=True)),
    ],
)
def test_profiles_name_the_setup_fields_their_model_refuses(profile, field, value):
    setup = types.LiveConnectConfig(**{field: value})
    assert [line.split(":")[0] for line in profile.refused(setup)] == [field]


def test_what_each_family_allows():
    thinking = types.LiveConnectConfig(thinking_config=types.ThinkingConfig(thinking_level=types.ThinkingLevel.LOW))
    assert GEMINI_3_8_LIVE_EXTENDED_THINKING.refused(thinking) == []
    proactive = types.LiveConnectConfig(proactivity=types.ProactivityConfig(proactive_audio=True))
    assert GEMINI_3_8_LIVE.refused(proactive) == []  # always on: saying so is fine
    assert GEMINI_2_5_NATIVE_AUDIO.refused(types.LiveConnectConfig(enable_affective_dialog=True)) == []
