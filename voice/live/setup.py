"""The Live session's setup, built from the voice settings and the model's profile: model voice,
system instruction (the fixed opening, the user's local date and time, then the chat's memory block), tools with their behaviour
stated, the history config where the model seeds history through it, transcription both ways,
session resumption, context window compression and voice activity detection. Fields the model
refuses are never sent."""

from __future__ import annotations

from google.genai import types

from ..config import VoiceConfig
from ..errors import RefusedSetup
from .profiles import profile_for

# "default" is absent on purpose: the field stays unset and the model's own default applies.
_START = {"high": types.StartSensitivity.START_SENSITIVITY_HIGH, "low": types.StartSensitivity.START_SENSITIVITY_LOW}
_END = {"high": types.EndSensitivity.END_SENSITIVITY_HIGH, "low": types.EndSensitivity.END_SENSITIVITY_LOW}


def system_instruction(config: VoiceConfig, memory_block: str, time_note: str) -> str:
    """The fixed opening, the time of the connection (so it stays right across reconnections) and the
    chat's memory block last: the parts before it change less often, which keeps the prompt cache."""
    parts = [config.instruction, time_note, memory_block.strip()]
    return "\n\n".join(part for part in parts if part)


def connect_config(
    config: VoiceConfig,
    instruction: str,
    declarations: list[types.FunctionDeclaration],
    handle: str | None,
    seeding: bool = False,
) -> types.LiveConnectConfig:
    """`seeding`: a fresh session whose history the client sends right after the setup."""
    profile = profile_for(config.live_model)
    speech = types.SpeechConfig(
        voice_config=types.VoiceConfig(prebuilt_voice_config=types.PrebuiltVoiceConfig(voice_name=config.live_voice)),
        language_code=config.live_language,
    )
    # Local detection: Parla sends activityStart/activityEnd, which the service takes only with its
    # own detection disabled (https://ai.google.dev/api/live#bidigeneratecontentrealtimeinput).
    vad = types.AutomaticActivityDetection(
        disabled=config.turn_detection == "local",
        start_of_speech_sensitivity=_START.get(config.vad_start_sensitivity),
        end_of_speech_sensitivity=_END.get(config.vad_end_sensitivity),
        silence_duration_ms=config.vad_silence_ms,
        prefix_padding_ms=config.vad_prefix_padding_ms,
    )
    setup = types.LiveConnectConfig(
        response_modalities=[types.Modality.AUDIO],
        speech_config=speech,
        system_instruction=types.Content(parts=[types.Part(text=instruction)]),
        tools=[types.Tool(function_declarations=profile.declare(declarations))] if declarations else None,
        input_audio_transcription=types.AudioTranscriptionConfig(),
        output_audio_transcription=types.AudioTranscriptionConfig(),
        session_resumption=types.SessionResumptionConfig(handle=handle),
        context_window_compression=types.ContextWindowCompressionConfig(
            trigger_tokens=config.compression_trigger_tokens,
            sliding_window=types.SlidingWindow(target_tokens=config.compression_target_tokens),
        ),
        realtime_input_config=types.RealtimeInputConfig(automatic_activity_detection=vad),
        history_config=profile.history_config(seeding),
        http_options=types.HttpOptions(base_url=config.live_url) if config.live_url else None,
    )
    refused = profile.refused(setup)
    if refused:
        raise RefusedSetup(f"{config.live_model} would refuse this setup: {'; '.join(refused)}")
    return setup
