"""`parla converse` says clearly what is missing before any audio or network is touched."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.tier("fast")


def test_converse_without_a_key_says_how_to_get_one(parla):
    result = parla("converse", "--new", ok=False)
    assert result.exit_code == 1
    assert "needs a Gemini API key: create one in Google AI Studio and set GEMINI_API_KEY" in result.stderr


@pytest.mark.tier("audio")
def test_converse_with_a_wrong_microphone_lists_the_devices(parla, pulse, monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", "some-key")
    monkeypatch.setenv("PARLA_INPUT_DEVICE", "USB headset")
    result = parla("converse", ok=False)
    assert result.exit_code == 1
    assert "PARLA_INPUT_DEVICE='USB headset' matches no input devices. Devices: [0] pulse" in result.stderr
