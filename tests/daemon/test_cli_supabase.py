"""Pointing Parla at a Supabase project from the command line: migrate, login, sync, use, check."""

from __future__ import annotations

import json
import os
import stat

import psycopg
import pytest
from typer.testing import CliRunner

from bench.corpus import write_jsonl
from parla.daemon.cli import app
from parla.memory.store.supabase.schema import SCHEMA_VERSION
from tests.peers.postgrest import ANON_KEY, PostgrestShim

pytestmark = pytest.mark.tier("postgres")


@pytest.fixture
def parla(tmp_path, monkeypatch):
    monkeypatch.setenv("PARLA_STORE_PATH", str(tmp_path / "parla.db"))
    monkeypatch.setenv("PARLA_CONFIG_FILE", str(tmp_path / "none.toml"))
    monkeypatch.setenv("PARLA_SUPABASE_SESSION_FILE", str(tmp_path / "cfg" / "session.json"))
    for key in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "PARLA_GEMINI_API_KEY", "PARLA_SUPABASE_SERVICE_KEY"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()

    def run(*args: str, ok: bool = True, **env: str):
        result = runner.invoke(app, list(args), env=env)
        if ok:
            assert result.exit_code == 0, result.output
        return result

    return run


def test_migrate_login_sync_and_use_a_supabase_project(parla, pg_cluster, tmp_path, monkeypatch):
    dsn = pg_cluster.new_database(migrated=False)
    failed = parla("db", "migrate", ok=False)
    assert failed.exit_code == 1 and "PARLA_SUPABASE_DB_URL" in failed.output
    # as the project's `postgres` role over TCP, as the connection string of a hosted project gives it
    monkeypatch.setenv("PARLA_SUPABASE_DB_URL", pg_cluster.owner_dsn(psycopg.conninfo.conninfo_to_dict(dsn)["dbname"]))
    assert "applied 20261121090000_parla_memory.sql" in parla("db", "migrate").output
    assert "up to date" in parla("db", "migrate").output

    source = write_jsonl(tmp_path / "chats.jsonl", 12, turns=(4, 30))
    assert json.loads(parla("import", str(source), "--json").stdout)["imported"] == 12
    parla("profile", "add", "My daughter is called Sofia")
    local_profile = json.loads(parla("profile", "list", "--json").stdout)

    with PostgrestShim(dsn) as shim:
        shim.create_user("ada@example.com", "correct horse")
        monkeypatch.setenv("PARLA_SUPABASE_URL", shim.url)
        monkeypatch.setenv("PARLA_SUPABASE_KEY", ANON_KEY)
        monkeypatch.setenv("PARLA_STORE", "supabase")
        not_yet = parla("chats", ok=False)
        assert not_yet.exit_code == 1 and "parla login" in not_yet.output
        wrong = parla("login", "--email", "ada@example.com", "--password", "nope", ok=False)
        assert wrong.exit_code == 1 and "Invalid login credentials" in wrong.output
        assert (
            "Signed in as ada@example.com"
            in parla("login", "--email", "ada@example.com", "--password", "correct horse").output
        )
        session = tmp_path / "cfg" / "session.json"
        assert stat.S_IMODE(os.stat(session).st_mode) == 0o600

        report = json.loads(parla("sync", "--json").stdout)
        assert (report["copied"], report["unchanged"], report["not_summarised"]) == (12, 0, [])
        again = json.loads(parla("sync", "--json").stdout)
        assert (again["copied"], again["unchanged"], again["turns_added"]) == (0, 12, 0)
        # what Parla knows about the user comes along, once
        assert (report["profile_entries_added"], again["profile_entries_added"]) == (len(local_profile), 0)
        assert "My daughter is called Sofia" in [
            e["text"] for e in json.loads(parla("profile", "list", "--json").stdout)
        ]

        chats = json.loads(parla("chats", "--json").stdout)
        assert len(chats) == 12 and all(c["title"] for c in chats)
        stats = json.loads(parla("stats", "--json").stdout)
        assert stats["store"] == "supabase" and stats["total_chats"] == 12 and stats["outbox_depth"] == 0
        assert stats["embedded_texts"] >= 24
        local = json.loads(parla("search", "the chat about my piano practice", "--json", PARLA_STORE="sqlite").stdout)
        remote = json.loads(parla("search", "the chat about my piano practice", "--json").stdout)
        assert remote["decision"] == local["decision"]
        assert [c["chat_id"] for c in remote["candidates"]] == [c["chat_id"] for c in local["candidates"]]
        check = json.loads(parla("db", "check", "--json").stdout)
        assert check["schema_version"] == check["expected"] == SCHEMA_VERSION
        # the vector indexes that now have rows, checked against an exact scan on demand
        checked = parla("db", "migrate", "--check-indexes").output
        assert "up to date" in checked and "searches may miss" not in checked, checked
        assert "index chat_windows_hnsw_256_m32: top-10 agreement with an exact scan" in checked, checked

        # the store away: what the user asks for is done on this device, said so, and sent later
        first, second, third = (c["id"] for c in chats[:3])
        shim.refuse()
        renamed = parla("rename", first[:8], "Kept while away")
        assert "Kept on this device" in renamed.output, renamed.output
        removed = parla("rm", second[:8], third[:8], "--yes")
        assert "Deleted 2 chats (2 wait for the store" in removed.output, removed.output
        shim.recover()
        after = {c["id"]: c["title"] for c in json.loads(parla("chats", "--json").stdout)}  # a read sends them first
        assert len(after) == 10 and after[first] == "Kept while away" and second not in after
        assert json.loads(parla("stats", "--json").stdout)["outbox_depth"] == 0

        assert "Signed out" in parla("logout").output
        gone = parla("stats", ok=False)
        assert gone.exit_code == 1 and "parla login" in gone.output
