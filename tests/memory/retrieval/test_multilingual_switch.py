"""Switch requests in Italian, Spanish and German against chats in those languages and in English
(tests/data/multilingual_switch.json), through the Gemini embedder's code path: the real
google-genai SDK against the REST emulator, which embeds with a multilingual sentence model as the
real service embeds with its multilingual one. `python -m bench.multilingual` prints the same
figures for the offline embedder beside these."""

from __future__ import annotations

import pytest

from bench.multilingual import evaluate
from parla.daemon.memory_services import gemini_client
from parla.daemon.settings import Settings
from parla.memory.embedders.gemini import GeminiEmbedder

pytestmark = pytest.mark.tier("scale")


async def test_requests_in_the_users_language_find_chats_in_any_language(store, gemini, config, capsys):
    settings = Settings(gemini_api_key=gemini.api_key, gemini_base_url=gemini.base_url)
    report = await evaluate(store, GeminiEmbedder(gemini_client(settings)), config)
    with capsys.disabled():
        print("\n" + "\n".join(report.lines()))
    assert len(report.outcomes) >= 30 and {o.language for o in report.outcomes} == {"it", "es", "de"}
    assert {o.chat_language for o in report.outcomes} == {"it", "es", "de", "en"}
    # Measured: same language 1.00 (12 of 12) switched to the right chat; across languages top-1
    # 0.91 and a right switch 0.77, one request `none` (the misses: laptop requests that also fit a
    # German chat about deducting a laptop; the `none` one sits just under the Gemini embedder's
    # 0.60, which keeps an unrelated request from switching now that each chat has many windows).
    assert report.share(True, "switched_right") >= 0.9
    assert report.share(False, "top1") >= 0.8 and report.share(False, "switched_right") >= 0.75
    assert report.share(None, "none") <= 1 / len(report.outcomes)


async def test_the_offline_embedder_finds_chats_in_the_requests_own_language(store, embedder, config):
    """WordLlama is English-trained: it finds a chat in the request's own language (Italian,
    Spanish and German stop and framing words are left out of both), rarely one in another language
    (shared names and loanwords only). Measured: same language 1.00, across languages top-1 0.59."""
    report = await evaluate(store, embedder, config)
    assert report.share(True, "top1") >= 0.9 and report.share(True, "switched_right") >= 0.9
    assert report.share(False, "top1") < report.share(True, "top1")
