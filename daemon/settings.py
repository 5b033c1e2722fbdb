"""Settings: pydantic-settings with the `PARLA_` prefix, read (highest first) from arguments, the
environment, a `.env` file in the working directory, then a TOML file (`config.toml` in the user
config dir, or the file PARLA_CONFIG_FILE names). Every memory, voice and daemon knob is a
setting (MemoryConfig, VoiceConfig, DaemonConfig). Where each value came from, and the errors
and warnings people see about them, are in daemon/settings_sources.py."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Literal

import platformdirs
from pydantic import AliasChoices, BeforeValidator, Field, SecretStr
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from parla.kernel.models import DEFAULT_EMBEDDING_MODEL, DEFAULT_SUMMARY_MODEL
from parla.memory.config import (
    INDEX_CHECK_AGREEMENT,
    INDEX_CHECK_REBUILDS,
    INDEX_CHECK_SAMPLE,
    SUPABASE_COMMIT_PAGE,
    MemoryConfig,
)
from parla.voice.config import VoiceConfig

from .config import DaemonConfig, UserPath, expand_path

APP = "parla"
# The stores chats can be kept in: each has its entry in daemon/stores.py's BACKENDS.
StoreName = Literal["sqlite", "supabase"]

CONFIG_FILE_VARIABLE = "PARLA_CONFIG_FILE"


def config_file() -> Path:
    named = os.environ.get(CONFIG_FILE_VARIABLE)
    return expand_path(named) if named else Path(platformdirs.user_config_dir(APP)) / "config.toml"


def default_store_path() -> Path:
    return Path(platformdirs.user_data_dir(APP)) / "parla.db"


def default_session_file() -> Path:
    return Path(platformdirs.user_config_dir(APP)) / "supabase-session.json"


def _upper(value: Any) -> Any:
    return value.upper() if isinstance(value, str) else value


class Settings(MemoryConfig, VoiceConfig, DaemonConfig, BaseSettings):
    # defer_build=False: the models it extends defer theirs, and every command makes Settings
    model_config = SettingsConfigDict(
        env_prefix="PARLA_", env_file=".env", extra="ignore", populate_by_name=True, defer_build=False
    )

    store: StoreName = Field(
        "sqlite", description="Where chats live: `sqlite` (the local file) or `supabase` (a Supabase project)."
    )
    store_path: UserPath = Field(
        default_factory=default_store_path,
        description="The SQLite file: the local store, and the outbox of the Supabase store.",
    )
    supabase_copy_path: UserPath | None = Field(
        None,
        description="This device's copy of the Supabase chats it wrote or read (a SQLite file), which answers "
        "while Supabase is away; default: `supabase-copy.db` beside store_path.",
    )
    supabase_recheck_s: float = Field(
        30.0,
        gt=0,
        description="Once Supabase was found away, seconds during which reads come from this device's copy "
        "without trying it; a write that reaches it (the next stored turn) ends that sooner.",
    )
    supabase_fill_every_s: float = Field(
        900.0,
        ge=0,
        description="Seconds between two rounds of the daemon's fill of this device's copy with every chat on "
        "Supabase (those other devices wrote too), so reads answer for them while Supabase is away; 0: no fill.",
    )
    supabase_fill_after_s: float = Field(
        60.0,
        ge=0,
        description="Seconds after the daemon starts before its first fill of the copy: its start and a first "
        "session come first.",
    )
    supabase_fill_pause_s: float = Field(
        0.5,
        ge=0,
        description="Seconds the fill waits between two chats it copies, so its share of the network and of "
        "Supabase stays small.",
    )
    supabase_fill_page: int = Field(
        500,
        ge=1,
        le=1000,
        description="Chats listed, or turns copied, a request while the copy is filled (1,000 is a project's row limit).",
    )
    supabase_url: str | None = Field(None, description="The Supabase project URL, https://<ref>.supabase.co.")
    supabase_key: SecretStr | None = Field(
        None, description="The project's anon (publishable) key, used with the session of `parla login`."
    )
    supabase_service_key: SecretStr | None = Field(
        None, description="The service-role key (single-user setups, bypasses RLS); needs supabase_user_id."
    )
    supabase_user_id: str | None = Field(None, description="The user id the service-role key acts for.")
    supabase_db_url: SecretStr | None = Field(
        None, description="Direct Postgres URL of the project, only for `parla db migrate` / `parla db check`."
    )
    supabase_session_file: UserPath = Field(
        default_factory=default_session_file, description="Where `parla login` keeps the session (mode 0600)."
    )
    supabase_timeout: float = Field(10.0, gt=0, description="Seconds before a Supabase request counts as failed.")
    supabase_commit_page: int = Field(
        SUPABASE_COMMIT_PAGE,
        ge=1,
        description="Re-embedded vectors written a request: each must end within the project's statement timeout "
        "(8 s for signed-in users); fewer for a project with a shorter one.",
    )
    supabase_index_check_sample: int = Field(
        INDEX_CHECK_SAMPLE,
        ge=1,
        description="Stored vectors of each HNSW index taken as queries when `parla db migrate` checks the index "
        "against an exact scan (after building it, or with --check-indexes).",
    )
    supabase_index_check_agreement: float = Field(
        INDEX_CHECK_AGREEMENT,
        ge=0,
        le=1,
        description="Top-10 agreement with the exact scan an HNSW index must reach, else it is built again.",
    )
    supabase_index_check_rebuilds: int = Field(
        INDEX_CHECK_REBUILDS,
        ge=0,
        description="Most times `parla db migrate` builds one HNSW index again while it falls short.",
    )
    supabase_retry_attempts: int = Field(
        3,
        ge=1,
        description="Tries of a write of turns while Supabase answers a temporary error (pool or statement "
        "timeout, serialization failure, deadlock, gateway 408/429/5xx, lost answer) before it waits in the outbox.",
    )
    supabase_retry_delay: float = Field(
        0.25, gt=0, description="Seconds before the second try of such a write; doubled each time, with jitter."
    )
    supabase_retry_max_delay: float = Field(
        30.0, gt=0, description="Longest wait between two rounds of sending the outbox while Supabase is away or busy."
    )
    embedder: Literal["auto", "offline", "gemini"] = Field(
        "auto",
        description="`auto` uses Gemini (gemini-embedding-001, multilingual) when a key is set, else `offline` "
        "(WordLlama, 256 dims, English); the daemon re-embeds the stored chats in the background after a change.",
    )
    reembed_batch: int = Field(
        64, ge=1, le=100, description="Texts per embedding call when the daemon re-embeds the chats in the background."
    )
    summarizer: Literal["auto", "offline", "gemini"] = Field(
        "auto", description="`auto` uses Gemini when a key is set, else the offline extractive summarizer."
    )
    embedding_model: str = Field(DEFAULT_EMBEDDING_MODEL, description="Gemini embedding model.")
    embedding_dim: int = Field(768, ge=128, le=3072, description="Gemini embedding size.")
    summary_model: str = Field(DEFAULT_SUMMARY_MODEL, description="Cheap Gemini model for summaries, facts, titles.")
    gemini_api_key: SecretStr | None = Field(
        None,
        validation_alias=AliasChoices("PARLA_GEMINI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"),
        description="Gemini API key (GEMINI_API_KEY or GOOGLE_API_KEY also work).",
    )
    gemini_base_url: str | None = Field(None, description="Override of the Gemini API address (proxies, tests).")
    model_retries: int = Field(
        3,
        ge=0,
        description="Retries of a failed Gemini call (HTTP 408/429/5xx, connection errors) by the client, and of "
        "a compaction that failed otherwise (a model that cannot be used is not retried again).",
    )
    model_retry_delay: float = Field(1.0, ge=0, description="First retry delay in seconds; doubles each retry.")
    model_offline_cooldown_s: float = Field(
        60.0,
        ge=0,
        description="After Gemini was unreachable or refused the key, seconds during which summaries are made "
        "offline without trying Gemini.",
    )
    log_level: Annotated[Literal["DEBUG", "INFO", "WARNING", "ERROR"], BeforeValidator(_upper)] = Field(
        "WARNING", description="Log level: `debug`, `info`, `warning` or `error` (any case)."
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (
            init_settings,
            env_settings,
            dotenv_settings,
            TomlConfigSettingsSource(settings_cls, toml_file=config_file()),
        )

    @property
    def copy_path(self) -> Path:
        return self.supabase_copy_path or self.store_path.with_name("supabase-copy.db")

    @property
    def has_gemini_key(self) -> bool:
        return self.gemini_api_key is not None and bool(self.gemini_api_key.get_secret_value())

    @property
    def embedder_in_use(self) -> Literal["offline", "gemini"]:
        """The embedder `embedder` resolves to: `auto` is Gemini with a key, else offline."""
        if self.embedder == "auto":
            return "gemini" if self.has_gemini_key else "offline"
        return self.embedder
