"""Settings sources and their precedence: environment > .env > config TOML > defaults."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from daemon.settings import Settings
from memory.config import MemoryConfig
from voice.config import VoiceConfig


@pytest.fixture
def clean(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PARLA_CONFIG_FILE", str(tmp_path / "config.toml"))
    for key in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "PARLA_GEMINI_API_KEY", "PARLA_TAIL", "PARLA_SUMMARY_WINDOW_SIZE"):
        monkeypatch.delenv(key, raising=False)
    return tmp_path


def test_defaults_are_the_seeds(clean):
    s = Settings()
    assert (
        s.summary_window_size,
        s.tail,
        s.chunk_summarize_threshold,
        s.summary_token_cap,
        s.prompt_memory_budget,
        s.chunk_size,
        s.meta_every,
    ) == (30, 12, 6000, 500, 3000, 10, 10)
    assert s.store == "sqlite" and s.store_path.name == "parla.db" and s.embedder == "offline"
    assert s.embedding_model == "gemini-embedding-001" and s.embedding_dim == 768
    assert not s.has_gemini_key and isinstance(s, MemoryConfig)


def test_every_memory_and_voice_knob_is_a_setting():
    assert set(MemoryConfig.model_fields) | set(VoiceConfig.model_fields) <= set(Settings.model_fields)
    assert all(f.description for f in Settings.model_fields.values())


def test_precedence(clean, monkeypatch):
    (clean / "config.toml").write_text("tail = 5\nsummary_window_size = 20\nprompt_memory_budget = 2000\n")
    (clean / ".env").write_text("PARLA_SUMMARY_WINDOW_SIZE=25\n")
    monkeypatch.setenv("PARLA_PROMPT_MEMORY_BUDGET", "2500")
    s = Settings()
    assert (s.tail, s.summary_window_size, s.prompt_memory_budget) == (5, 25, 2500)


@pytest.mark.parametrize("name", ["GEMINI_API_KEY", "GOOGLE_API_KEY", "PARLA_GEMINI_API_KEY"])
def test_key_from_any_of_its_names(clean, monkeypatch, name):
    monkeypatch.setenv(name, "k-123")
    s = Settings()
    assert s.has_gemini_key and s.gemini_api_key.get_secret_value() == "k-123"
    assert "k-123" not in repr(s)


def test_inconsistent_knobs_are_refused(clean, monkeypatch):
    monkeypatch.setenv("PARLA_SUMMARY_TOKEN_CAP", "4000")
    with pytest.raises(ValidationError, match="at most half of chunk_summarize_threshold"):
        Settings()


def test_every_setting_is_in_the_readme():
    readme = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")
    missing = [name for name in Settings.model_fields if f"`PARLA_{name.upper()}`" not in readme]
    assert missing == []
