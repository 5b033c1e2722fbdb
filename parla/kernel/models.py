"""The Gemini model ids Parla uses by default, and the ids it knows to be retired or superseded with
what replaces them. Data only: `parla doctor` and the run-time errors (Live session, summaries,
embeddings) read it to name the setting to change and the id to put there.

Sources, read November 2026:
- Gemini deprecations, https://ai.google.dev/gemini-api/docs/deprecations (Gemini 3 models with no
  shutdown date: gemini-3.8-live, gemini-3.8-live-extended-thinking, gemini-3.8-flash, 3.7-flash,
  3.6-flash, gemini-3.5-flash-lite, 3.5-flash; gemini-3.1-flash-lite shuts down May 7, 2027; the Live
  models gemini-2.0-flash-live-001 and gemini-live-2.5-flash-preview shut down December 9, 2025).
- Gemini 3.8 Live, https://ai.google.dev/gemini-api/docs/models/gemini-3.8-live ("the default choice for
  most low-latency voice agents"; stable since September 2026; migrating from gemini-3.1-flash-live-preview,
  itself a legacy preview that replaced gemini-2.5-flash-native-audio-preview-12-2025).
- Gemini 3.5 Flash-Lite, https://ai.google.dev/gemini-api/docs/models/gemini-3.5-flash-lite (stable,
  July 2026; the documented replacement of gemini-2.5-flash; gemini-2.5-flash and gemini-2.5-pro are
  routed to gemini-3.5-flash-lite / gemini-3.8-flash from December 1, 2026).
- Gemini embedding, https://ai.google.dev/gemini-api/docs/models/gemini-embedding-001 (GA, 128-3072
  dims, 768 / 1536 / 3072 recommended, no shutdown date on the deprecations page); text-embedding-004
  shut down January 14, 2026 (Gemini API changelog).
- Gemini 3.8 Flash-Lite TTS, https://ai.google.dev/gemini-api/docs/models/gemini-3.8-flash-lite-tts
  ("fast, cost-efficient workhorse text-to-speech model built to replace gemini-3.1-flash-tts-preview",
  for read-aloud features and everyday single-speaker speech; same schema as gemini-3.8-flash-tts, the
  flagship); the migration guide, https://docs.cloud.google.com/gemini-enterprise-agent-platform/models/text-to-speech/migration-guide,
  names gemini-3.1-flash-tts-preview and the 2.5 TTS models as the earlier ones to move from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

ModelRole = Literal["live", "summary", "embedding", "look_up", "speech"]

DEFAULT_LIVE_MODEL = "gemini-3.8-live"
DEFAULT_SUMMARY_MODEL = "gemini-3.5-flash-lite"
DEFAULT_EMBEDDING_MODEL = "gemini-embedding-001"
# Look-ups are one grounded generateContent on the cheap text model, which takes Google Search
# grounding (https://firebase.google.com/docs/ai-logic/grounding-google-search lists
# gemini-3.5-flash-lite among the models that support it).
DEFAULT_LOOK_UP_MODEL = DEFAULT_SUMMARY_MODEL
# What Parla says with no conversation open (a reminder) is said by a text-to-speech model in the Live
# session's voice: the cheap, fast one, made for read-aloud features.
DEFAULT_SPEECH_MODEL = "gemini-3.8-flash-lite-tts"

DEFAULTS: dict[ModelRole, str] = {
    "live": DEFAULT_LIVE_MODEL,
    "summary": DEFAULT_SUMMARY_MODEL,
    "embedding": DEFAULT_EMBEDDING_MODEL,
    "look_up": DEFAULT_LOOK_UP_MODEL,
    "speech": DEFAULT_SPEECH_MODEL,
}

# The setting that holds each model, as the user writes it (environment or .env).
SETTINGS: dict[ModelRole, str] = {
    "live": "PARLA_LIVE_MODEL",
    "summary": "PARLA_SUMMARY_MODEL",
    "embedding": "PARLA_EMBEDDING_MODEL",
    "look_up": "PARLA_LOOK_UP_MODEL",
    "speech": "PARLA_SPEECH_MODEL",
}

# The REST method a model must offer for each role (the `supportedGenerationMethods` of models.list).
ACTIONS: dict[ModelRole, str] = {
    "live": "bidiGenerateContent",
    "summary": "generateContent",
    "embedding": "embedContent",
    "look_up": "generateContent",
    "speech": "generateContent",
}

Status = Literal["shut down", "deprecated", "superseded"]


@dataclass(frozen=True)
class Retirement:
    status: Status  # shut down: the API no longer has it; deprecated: a shutdown date is set; superseded: a newer one
    replacement: str  # what Parla recommends today (the documented successor, followed to a current model)
    when: str  # the date the documentation gives, or what it says


_GEMINI_2_0_SHUTDOWN = "2026, announced for February 2026 at the earliest"

RETIRED: dict[str, Retirement] = {
    # Live models
    "gemini-2.0-flash-live-001": Retirement("shut down", DEFAULT_LIVE_MODEL, "December 9, 2025"),
    "gemini-live-2.5-flash-preview": Retirement("shut down", DEFAULT_LIVE_MODEL, "December 9, 2025"),
    "gemini-2.5-flash-native-audio-preview-09-2025": Retirement(
        "superseded", DEFAULT_LIVE_MODEL, "by -12-2025 in December 2025, then by Gemini 3.1 and 3.8 Live"
    ),
    "gemini-2.5-flash-native-audio-preview-12-2025": Retirement(
        "superseded", DEFAULT_LIVE_MODEL, "by gemini-3.1-flash-live-preview, then gemini-3.8-live"
    ),
    "gemini-3.1-flash-live-preview": Retirement(
        "superseded", DEFAULT_LIVE_MODEL, "a legacy preview since gemini-3.8-live (September 15, 2026)"
    ),
    # text models (summaries, facts, titles)
    "gemini-1.5-flash": Retirement("shut down", DEFAULT_SUMMARY_MODEL, "before 2026"),
    "gemini-2.0-flash": Retirement("shut down", DEFAULT_SUMMARY_MODEL, _GEMINI_2_0_SHUTDOWN),
    "gemini-2.0-flash-001": Retirement("shut down", DEFAULT_SUMMARY_MODEL, _GEMINI_2_0_SHUTDOWN),
    "gemini-2.0-flash-lite": Retirement("shut down", DEFAULT_SUMMARY_MODEL, _GEMINI_2_0_SHUTDOWN),
    "gemini-2.0-flash-lite-001": Retirement("shut down", DEFAULT_SUMMARY_MODEL, _GEMINI_2_0_SHUTDOWN),
    "gemini-2.5-flash": Retirement(
        "deprecated", DEFAULT_SUMMARY_MODEL, "shuts down December 1, 2026; then routed to gemini-3.5-flash-lite"
    ),
    "gemini-2.5-pro": Retirement(
        "deprecated", "gemini-3.8-flash", "shuts down December 1, 2026; then routed to gemini-3.8-flash"
    ),
    # The copies of the deprecations page disagree (July 22, 2026, or "until further notice").
    "gemini-2.5-flash-lite": Retirement("deprecated", DEFAULT_SUMMARY_MODEL, "shutdown announced for July 22, 2026"),
    "gemini-3.1-flash-lite": Retirement("deprecated", DEFAULT_SUMMARY_MODEL, "shuts down May 7, 2027"),
    # embeddings
    "text-embedding-004": Retirement("shut down", DEFAULT_EMBEDDING_MODEL, "January 14, 2026"),
    # speech
    "gemini-3.1-flash-tts-preview": Retirement(
        "superseded", DEFAULT_SPEECH_MODEL, "a preview; gemini-3.8-flash-lite-tts was built to replace it"
    ),
    "gemini-2.5-flash-preview-tts": Retirement("superseded", DEFAULT_SPEECH_MODEL, "by the Gemini 3.8 TTS models"),
    "gemini-2.5-pro-preview-tts": Retirement("superseded", "gemini-3.8-flash-tts", "by the Gemini 3.8 TTS models"),
}


def bare_id(model: str) -> str:
    """`models/gemini-x` and `gemini-x` name the same model."""
    return model.removeprefix("models/")


def retirement(model: str) -> Retirement | None:
    return RETIRED.get(bare_id(model))


def replacement_advice(role: ModelRole, model: str | None) -> str:
    """What to do about a model the API does not offer (or no longer should be used), in one
    sentence naming the setting and the id to set."""
    setting = SETTINGS[role]
    known = retirement(model) if model else None
    if model and known:
        return f"{bare_id(model)} is {known.status} ({known.when}): set {setting}={known.replacement}"
    return f"set {setting} to a model your key can use (the default is {DEFAULTS[role]})"


def not_found_advice(role: ModelRole, detail: str, model: str | None = None) -> str | None:
    """`detail` (an API error: a Live close 1008, an HTTP 404) followed by the fix when it says the
    model does not exist or does not serve this method; None when it says something else. The
    model is read from the error's own wording ("models/X is not found ...") unless given."""
    lowered = detail.lower()
    if "not found" not in lowered and "not supported for" not in lowered:
        return None
    named = re.search(r"models/([\w.-]+)", detail)
    advice = replacement_advice(role, model or (named.group(1) if named else None))
    return f"{detail}; {advice} (`parla doctor` lists the models your key can use)"
