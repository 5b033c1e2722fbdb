"""The model table: the advice a run-time "model not found" gets, naming the setting and the fix."""

from __future__ import annotations

import pytest

from parla.kernel.models import DEFAULTS, RETIRED, not_found_advice, replacement_advice, retirement

pytestmark = pytest.mark.tier("fast")


def test_the_defaults_are_current():
    assert DEFAULTS == {
        "live": "gemini-3.8-live",
        "summary": "gemini-3.5-flash-lite",
        "embedding": "gemini-embedding-001",
        "look_up": "gemini-3.5-flash-lite",
        "speech": "gemini-3.8-flash-lite-tts",
    }
    assert all(retirement(model) is None for model in DEFAULTS.values())
    # every replacement is itself current
    assert all(retirement(r.replacement) is None for r in RETIRED.values())


def test_a_live_close_naming_a_retired_model_gets_its_replacement():
    detail = (
        "close 1008: models/gemini-live-2.5-flash-preview is not found for API version v1beta, or is not "
        "supported for bidiGenerateContent. Call ListModels"
    )
    assert not_found_advice("live", detail) == (
        f"{detail}; gemini-live-2.5-flash-preview is shut down (December 9, 2025): "
        "set PARLA_LIVE_MODEL=gemini-3.8-live (`parla doctor` lists the models your key can use)"
    )


def test_an_unknown_model_gets_the_setting_and_the_default():
    advice = not_found_advice("summary", "Gemini failed (404): models/gemini-7-turbo is not found", "gemini-7-turbo")
    assert advice is not None and advice.endswith(
        "set PARLA_SUMMARY_MODEL to a model your key can use (the default is gemini-3.5-flash-lite) "
        "(`parla doctor` lists the models your key can use)"
    )


def test_other_errors_get_no_model_advice():
    assert not_found_advice("live", "close 1008: Operation is not implemented, or supported, or enabled") is None
    assert not_found_advice("embedding", "Gemini embedding failed (429): quota exceeded") is None


def test_a_deprecated_model_is_named_with_its_date():
    assert replacement_advice("summary", "models/gemini-2.5-flash-lite") == (
        "gemini-2.5-flash-lite is deprecated (shutdown announced for July 22, 2026): "
        "set PARLA_SUMMARY_MODEL=gemini-3.5-flash-lite"
    )
