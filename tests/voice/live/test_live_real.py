"""Against the real Gemini Live API: runs only when GEMINI_API_KEY is set (never in CI, which has
no network). A typed turn is answered by voice and both turns are stored with their text."""

from __future__ import annotations

import os

import pytest
from google import genai

from parla.daemon.chat_memory import ChatMemory
from parla.kernel.models import DEFAULT_LIVE_MODEL
from parla.memory.config import MemoryConfig
from parla.memory.store.refused import RefusedTurns
from parla.voice.config import VoiceConfig
from parla.voice.live.conversation import LiveConversation
from tests.conftest import eventually

KEY = os.environ.get("GEMINI_API_KEY")
pytestmark = [
    pytest.mark.tier("fast"),
    pytest.mark.skipif(not KEY, reason="set GEMINI_API_KEY to run against the real Live API"),
]


async def test_real_live_api_answers_a_typed_turn(store):
    chat = (await store.create_chat(title="real")).chat
    config = VoiceConfig()  # the default model, as a new user gets it
    client = genai.Client(api_key=KEY)
    async with LiveConversation(
        client, config, ChatMemory(store, MemoryConfig(), chat.id, RefusedTurns(RefusedTurns.beside(store.path)))
    ) as conversation:
        conversation.say("Please answer with one short sentence: what colour is a clear daytime sky?")
        await eventually(lambda: _stored(store, chat.id), timeout=60, what="the spoken answer")
    history = (await store.load_history(chat.id)).full_history
    assert history[0].source == "text" and history[1].role == "model"
    assert history[1].model_variant == DEFAULT_LIVE_MODEL
    assert "blue" in history[1].text.lower()


async def _stored(store, chat_id):
    return (await store.get_chat(chat_id)).turn_count >= 2
