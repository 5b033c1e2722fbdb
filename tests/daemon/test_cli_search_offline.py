"""A key is set but Gemini cannot be reached: `parla search` neither waits for the embedder nor
fails. It answers by words and titles and says so, through the CLI on a store of Gemini vectors."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.tier("fast")

DATA = Path(__file__).parents[1] / "data" / "imports"


@pytest.fixture
def black_hole() -> Iterator[str]:
    """An address that accepts connections and never answers (a network that drops everything)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(64)
        yield f"http://127.0.0.1:{s.getsockname()[1]}"


@pytest.fixture
def gemini_store(parla, monkeypatch, gemini):
    """Chats imported and embedded by (the emulator of) Gemini."""
    monkeypatch.setenv("PARLA_EMBEDDER", "gemini")
    monkeypatch.setenv("GEMINI_API_KEY", gemini.api_key)
    monkeypatch.setenv("PARLA_GEMINI_BASE_URL", gemini.base_url)
    for export in ("chatgpt_conversations.json", "claude_conversations.json", "openwebui_chat_export.json"):
        parla("import", str(DATA / export))
    return parla


@pytest.mark.parametrize("network", ["silent", "refused"])
def test_search_answers_by_words_and_titles_when_the_request_cannot_be_embedded(
    gemini_store, monkeypatch, black_hole, network
):
    monkeypatch.setenv("PARLA_SEARCH_EMBED_TIMEOUT_S", "1")  # the default (the parla fixture waits longer)
    if network == "silent":
        monkeypatch.setenv("PARLA_GEMINI_BASE_URL", black_hole)
    else:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]  # closed again: nothing listens there
        monkeypatch.setenv("PARLA_GEMINI_BASE_URL", f"http://127.0.0.1:{port}")
    started = time.perf_counter()
    found = json.loads(gemini_store("search", "the birthday chat", "--json").stdout)
    print(f"search with Gemini {network}: {time.perf_counter() - started:.2f} s")
    assert found["by_words"].startswith("the request could not be embedded")
    if network == "silent":
        assert found["by_words"] == "the request could not be embedded within 1 s"
    assert found["decision"] == "switch" and found["reason"].startswith("answered by words and titles")
    top = found["candidates"][0]
    assert (top["title"], top["matched_kind"], top["similarity"]) == ("Gift ideas for Mom's 60th birthday", "title", 0)
    # what was said is found by its words too
    said = json.loads(gemini_store("search", "the monstera with yellow leaves", "--json").stdout)
    assert said["by_words"] and said["candidates"][0]["title"] == "My plant is dying"
    assert said["candidates"][0]["matched_kind"] == "turns"
    text = gemini_store("search", "the birthday chat").stdout
    assert "answered by words and titles" in text
