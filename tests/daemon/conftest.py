"""The daemon under test: settings wired to the Live emulator, the virtual audio devices and a
SQLite store in the test's folder, and the daemon running as a task."""

from __future__ import annotations

import asyncio
import os
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from parla.daemon.cli import app
from parla.daemon.memory_services import open_memory
from parla.daemon.settings import Settings
from parla.daemon.supervisor import Daemon
from tests.conftest import SEARCH_EMBED_TIMEOUT_S


def peer_settings(live, gemini, tmp_path, **more: Any) -> Settings:
    """Settings for the Live and Gemini REST emulators and a SQLite store in the test's folder."""
    return Settings(
        store_path=tmp_path / "parla.db",
        gemini_api_key=live.api_key,
        gemini_base_url=gemini.base_url,
        live_url=live.url,
        summarizer="offline",
        **more,
    )


@pytest.fixture
def daemon_settings(pulse, live, gemini, live_certificate, tmp_path, monkeypatch):
    monkeypatch.setenv("SSL_CERT_FILE", str(live_certificate[0]))
    return peer_settings(
        live,
        gemini,
        tmp_path,
        activation="push_to_talk",
        idle_timeout=1.0,
        control_socket=tmp_path / "run" / "ctl.sock",  # a folder the daemon makes
        shutdown_timeout_s=5.0,
        save_drain_s=5.0,
        ui_port=0,  # any free port: tests run side by side
        ui_token_file=tmp_path / "ui-token",
        search_embed_timeout_s=SEARCH_EMBED_TIMEOUT_S,
    )


def process_env(pulse, live, gemini, live_certificate, tmp_path, **more: str) -> dict[str, str]:
    """The environment of `parla run` as its own process: the peers of `daemon_settings`, a SQLite
    store, control socket and config of the test's folder; `more` adds or replaces variables."""
    return {
        **os.environ,
        "PULSE_SERVER": pulse.env["PULSE_SERVER"],
        "SSL_CERT_FILE": str(live_certificate[0]),
        "PARLA_CONFIG_FILE": str(tmp_path / "none.toml"),
        "PARLA_STORE_PATH": str(tmp_path / "parla.db"),
        "PARLA_ACTIVATION": "push_to_talk",
        "PARLA_CONTROL_SOCKET": str(tmp_path / "ctl.sock"),
        "PARLA_LIVE_URL": live.url,
        "GEMINI_API_KEY": live.api_key,
        "PARLA_GEMINI_BASE_URL": gemini.base_url,
        "PARLA_SUMMARIZER": "offline",
        "PARLA_UI_PORT": "0",
        "PARLA_UI_TOKEN_FILE": str(tmp_path / "ui-token"),
        **more,
    }


def supabase_settings(peer, user: str, store_path: Path, **more: Any) -> Settings:
    """Settings for the Supabase store on the peer with the service-role key, for `user`."""
    return Settings(
        store="supabase",
        store_path=store_path,
        supabase_url=peer.url,
        supabase_service_key=peer.service_key,
        supabase_user_id=user,
        **more,
    )


@asynccontextmanager
async def running(settings: Settings, title: str = "Japan"):
    async with open_memory(settings) as mem:
        chat_id = (await mem.store.create_chat(title=title)).chat.id
        daemon = Daemon(mem, chat_id)
        task = asyncio.create_task(daemon.serve())
        async with asyncio.timeout(10):
            await daemon.ready.wait()
        try:
            yield daemon, mem, chat_id
        finally:
            daemon.stop()
            async with asyncio.timeout(settings.shutdown_timeout_s + 5):
                await task


@pytest.fixture
def parla(tmp_path, monkeypatch):
    """`parla ARGS...` in-process on a store, config and control socket of the test's own (no key
    set); `ok=False` for a command expected to fail, `input` for what is typed."""
    monkeypatch.setenv("PARLA_STORE_PATH", str(tmp_path / "parla.db"))
    monkeypatch.setenv("PARLA_CONFIG_FILE", str(tmp_path / "none.toml"))
    monkeypatch.setenv("PARLA_CONTROL_SOCKET", str(tmp_path / "ctl.sock"))
    monkeypatch.setenv("PARLA_SEARCH_EMBED_TIMEOUT_S", str(SEARCH_EMBED_TIMEOUT_S))
    for key in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "PARLA_GEMINI_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()

    def run(*args: str, ok: bool = True, input: str | None = None):
        result = runner.invoke(app, list(args), input=input)
        if ok:
            assert result.exit_code == 0, result.output
        return result

    return run
