"""Settings sources and their precedence: environment > .env > config TOML > defaults."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pydantic import ValidationError

from parla.daemon import settings_sources
from parla.daemon.settings import Settings, config_file
from parla.daemon.settings_sources import SettingsError
from parla.memory.config import MemoryConfig
from parla.voice.config import VoiceConfig

pytestmark = pytest.mark.tier("fast")


@pytest.fixture
def clean(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PARLA_CONFIG_FILE", str(tmp_path / "config.toml"))
    for key in list(os.environ):  # this machine's own settings and keys stay out of the test
        if key.startswith("PARLA_") and key != "PARLA_CONFIG_FILE" or key in ("GEMINI_API_KEY", "GOOGLE_API_KEY"):
            monkeypatch.delenv(key)
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
    assert s.store == "sqlite" and s.store_path.name == "parla.db" and s.embedder == "auto"
    assert s.embedder_in_use == "offline" and Settings(gemini_api_key="k").embedder_in_use == "gemini"
    assert Settings(gemini_api_key="k", embedder="offline").embedder_in_use == "offline"
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


def _error() -> str:
    with pytest.raises(SettingsError) as caught:
        settings_sources.load()
    return str(caught.value)


def test_paths_expand_the_home_folder(clean, monkeypatch):
    monkeypatch.setenv("PARLA_STORE_PATH", "~/chats/parla.db")
    (clean / "config.toml").write_text('supabase_session_file = "$HOME/s.json"\ncontrol_socket = "~/run/ctl.sock"\n')
    s = Settings()
    home = Path.home()
    assert (s.store_path, s.supabase_session_file, s.control_socket) == (
        home / "chats" / "parla.db",
        home / "s.json",
        home / "run" / "ctl.sock",
    )
    monkeypatch.setenv("PARLA_CONFIG_FILE", "~/elsewhere/config.toml")
    assert config_file() == home / "elsewhere" / "config.toml"


def test_a_broken_config_file_is_named_with_its_line(clean):
    (clean / "config.toml").write_text("tail = 5\nsummary_window_size = \n")
    message = _error()
    assert str(clean / "config.toml") in message and "line 2" in message and "not valid TOML" in message


def test_a_bad_value_in_the_file_is_blamed_on_the_file(clean):
    (clean / "config.toml").write_text('# mine\ntail = "many"\n')
    message = _error()
    assert message.startswith(f"setting tail, from {clean / 'config.toml'}, line 2: Input should be a valid integer")
    assert "PARLA_TAIL" not in message
    (clean / ".env").write_text("PARLA_TAIL=lots\n")  # .env outranks the file, and is named as such
    assert _error().startswith(f"setting tail, from PARLA_TAIL in {clean / '.env'}: ")


def test_settings_that_do_not_fit_together_say_where_each_came_from(clean, monkeypatch):
    (clean / "config.toml").write_text("summary_window_size = 20\n")
    monkeypatch.setenv("PARLA_TAIL", "25")
    assert _error() == (
        "settings do not fit together: tail (25) must be smaller than summary_window_size (20), or compaction "
        f"would have nothing to fold (tail from PARLA_TAIL in the environment; summary_window_size from "
        f"{clean / 'config.toml'}, line 1)"
    )


def test_log_levels_in_any_case(clean, monkeypatch):
    monkeypatch.setenv("PARLA_LOG_LEVEL", "debug")
    assert Settings().log_level == "DEBUG"


def test_names_that_are_not_settings_are_warned_about_with_the_closest(clean, monkeypatch):
    monkeypatch.setenv("PARLA_TALE", "5")
    (clean / ".env").write_text("PARLA_EMBEDER=gemini\nGEMINI_API_KEY=x\n")
    (clean / "config.toml").write_text("tial = 5\nstore = 'sqlite'\n")
    assert settings_sources.warnings() == [
        "PARLA_TALE in the environment is not a Parla setting; did you mean PARLA_TAIL?",
        f"PARLA_EMBEDER in {clean / '.env'} is not a Parla setting; did you mean PARLA_EMBEDDER?",
        f"tial in {clean / 'config.toml'} is not a Parla setting; did you mean tail?",
    ]
