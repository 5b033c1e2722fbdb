"""Words said in Parla's own voice: the speech model through the real google-genai SDK against the
Gemini REST emulator (which answers with real speech), and the offline command when the model fails,
refuses or does not answer in time."""

from __future__ import annotations

import time

import pytest
from google import genai
from google.genai import types

from parla.voice.audio.speech import Speech
from parla.voice.audio.speech_model import SpeechModel
from parla.voice.errors import SpeechFailed
from tests.peers.gemini_speech import spoken_pcm

pytestmark = pytest.mark.tier("process")  # the speech command, and flite in the emulator

WORDS = "Reminder: call my sister about the train."
FLITE = "flite -voice slt -f {text_file} -o {wav}"


@pytest.fixture
def client(gemini) -> genai.Client:
    # no retries: a scripted fault is answered once
    options = types.HttpOptions(base_url=gemini.base_url, retry_options=types.HttpRetryOptions(attempts=1))
    return genai.Client(api_key=gemini.api_key, http_options=options)


@pytest.mark.parametrize("model", ["gemini-3.8-flash-lite-tts", "gemini-3.1-flash-tts-preview"])
async def test_the_words_in_the_live_voice_as_the_model_says_them(gemini, client, model):
    """The 3.8 models answer a WAV file, the earlier ones raw 24 kHz PCM: both are the model's audio
    as it was sent."""
    pcm = await SpeechModel(client, model, "Kore").spoken(WORDS)
    assert pcm == spoken_pcm(WORDS, "Kore") and len(pcm) > 24000  # over half a second of speech
    (request,) = gemini.speech_requests()
    config = request.body["generationConfig"]
    assert config["responseModalities"] == ["AUDIO"]
    voice = config["speechConfig"]["voice_config"]["prebuilt_voice_config"]["voice_name"]  # as the SDK sends it
    assert voice == "Kore"
    assert not {"temperature", "topP", "topK"} & set(config)  # the 3.8 models refuse them
    assert request.body["contents"] == [{"role": "user", "parts": [{"text": WORDS}]}]  # verbatim, alone


async def test_the_model_refusing_is_a_speech_failure_that_says_why(gemini, client):
    with pytest.raises(
        SpeechFailed, match=r"the speech model gemini-3.8-flash-lite-tts \(voice Nobody\) refused the words with 400"
    ):
        await SpeechModel(client, "gemini-3.8-flash-lite-tts", "Nobody").spoken(WORDS)
    with pytest.raises(SpeechFailed, match="gemini-3.5-flash-lite .* refused the words with 400: Multi-modal output"):
        await SpeechModel(client, "gemini-3.5-flash-lite", "Puck").spoken(WORDS)  # a text model: no audio
    with pytest.raises(SpeechFailed, match="refused the words with 404: models/gemini-9-tts is not found"):
        await SpeechModel(client, "gemini-9-tts", "Puck").spoken(WORDS)


@pytest.mark.parametrize("fault", ["quota", "unavailable", "no network"])
async def test_a_model_that_fails_leaves_the_words_to_the_offline_command(gemini, client, fault):
    if fault == "quota":
        gemini.fail_next(429, message="Resource has been exhausted (e.g. check quota).")
    elif fault == "unavailable":
        gemini.fail_next(503, message="The model is overloaded. Please try again later.")
    else:
        gemini.drop_next()
    speech = Speech(FLITE, SpeechModel(client, "gemini-3.8-flash-lite-tts", "Puck"), timeout_s=5.0)
    said = await speech.say(WORDS)
    assert said.by == "the offline command flite" and len(said.pcm) > 24000
    assert said.pcm != spoken_pcm(WORDS, "Puck")


async def test_a_model_that_does_not_answer_is_given_up_within_its_time(gemini, client):
    gemini.hang_s = 3.0
    speech = Speech(FLITE, SpeechModel(client, "gemini-3.8-flash-lite-tts", "Puck"), timeout_s=0.5)
    started = time.monotonic()
    said = await speech.say(WORDS)
    took = time.monotonic() - started
    assert said.by == "the offline command flite" and took < gemini.hang_s, f"{took:.2f} s"


async def test_without_a_model_the_offline_command_says_them():
    said = await Speech(FLITE, None, timeout_s=5.0).say(WORDS)
    assert said.by == "the offline command flite" and len(said.pcm) > 24000
