"""`parla reminders`: list, add (times in the user's words and zone) and cancel; a running daemon
is told at once and says one set for a few seconds from now."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime, timedelta

import pytest

from parla.memory.store.sqlite.store import SQLiteChatStore
from parla.records.reminder import Reminder
from parla.records.turn import utcnow
from tests.conftest import eventually
from tests.daemon.conftest import running

pytestmark = pytest.mark.tier("fast")


def test_reminders_list_add_and_cancel(parla, monkeypatch):
    monkeypatch.setenv("PARLA_TIME_ZONE", "Europe/Rome")
    monkeypatch.setenv("PARLA_DEVICE_NAME", "laptop")
    assert "No reminders to come" in parla("reminders", "list").stdout
    assert "Set " in parla("reminders", "add", "call my sister", "--at", "tomorrow at 17:00").stdout
    parla("reminders", "add", "pasta", "--at", "in 10 minutes", "--timer")
    parla("reminders", "add", "the dentist appointment", "--at", "in 2 days")
    listed = json.loads(parla("reminders", "list", "--json").stdout)
    assert [(r["number"], r["text"], r["kind"], r["device"]) for r in listed] == [
        (1, "pasta", "timer", "laptop"),
        (2, "call my sister", "reminder", "laptop"),
        (3, "the dentist appointment", "reminder", "laptop"),
    ]
    sister = datetime.fromisoformat(listed[1]["due_at"])
    assert (sister.hour, sister.minute, listed[1]["time_zone"]) == (16, 0, "Europe/Rome")  # 17:00 in Rome, in UTC
    assert "Cancelled" in parla("reminders", "cancel", "dentist").stdout
    assert "Cancelled" in parla("reminders", "cancel", "1").stdout
    assert [r["text"] for r in json.loads(parla("reminders", "list", "--json").stdout)] == ["call my sister"]
    everything = {r["text"]: r["state"] for r in json.loads(parla("reminders", "list", "--all", "--json").stdout)}
    assert everything == {"pasta": "cancelled", "call my sister": "pending", "the dentist appointment": "cancelled"}
    failed = parla("reminders", "add", "x", "--at", "whenever it suits", ok=False)
    assert failed.exit_code == 1 and "could not read" in failed.output
    past = parla("reminders", "add", "x", "--at", "in -5 minutes", ok=False)  # was set for tomorrow
    assert past.exit_code == 1 and "already past" in past.output
    assert parla("reminders", "cancel", "taxes", ok=False).exit_code == 1


@pytest.mark.tier("audio")
async def test_a_reminder_added_from_the_cli_is_said_by_the_running_daemon(daemon_settings, parla, monkeypatch):
    monkeypatch.setenv("PARLA_STORE_PATH", str(daemon_settings.store_path))
    monkeypatch.setenv("PARLA_CONTROL_SOCKET", str(daemon_settings.control_socket))
    settings = daemon_settings.model_copy(update={"reminder_recheck_s": 600.0})  # only the CLI's word wakes it
    async with running(settings) as (_, mem, _chat):
        await asyncio.to_thread(parla, "reminders", "add", "tea is ready", "--at", "in 2 seconds", "--timer")

        async def said():
            fired = [r for r in await mem.store.list_reminders(history=True) if r.state == "fired"]
            return fired[0] if fired else None

        reminder = await eventually(said, timeout=10, what="the daemon to say the CLI's reminder")
    assert reminder.fired_at is not None and (reminder.fired_at - reminder.due_at).total_seconds() <= 1.0
    assert reminder.due_at < utcnow()


@pytest.mark.tier("audio")
def test_doctor_tries_the_reminder_speech_command(parla, pulse, monkeypatch):
    def speech_check() -> dict[str, str]:
        checks = json.loads(parla("doctor", "--json", ok=False).stdout)  # no key here: doctor exits 1
        return next(c for c in checks if c["name"] == "reminder speech")

    speech = speech_check()
    assert speech["outcome"] == "ok" and speech["detail"].startswith("flite (")
    monkeypatch.setenv("PARLA_REMINDER_SPEECH_COMMAND", "/nonexistent/say {text} {wav}")
    speech = speech_check()
    assert speech["outcome"] == "warn" and "tone only" in speech["detail"] and "flite" in speech["fix"]


async def test_the_list_tells_a_said_reminder_from_one_cut_off(parla, tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # the table's cells on one line each
    async with SQLiteChatStore(tmp_path / "parla.db") as store:
        for text in ("said whole", "cut off"):
            r = await store.add_reminder(Reminder(text=text, due_at=utcnow() - timedelta(minutes=5)))
            await store.claim_reminder(r.id, "laptop")
            if text == "said whole":
                await store.mark_reminder_said(r.id, "laptop")
    listed = await asyncio.to_thread(parla, "reminders", "list", "--all", "--json")
    rows = {r["text"]: r for r in json.loads(listed.stdout)}
    said, cut = rows["said whole"], rows["cut off"]
    assert (said["state"], said["claimed_by"], said["said_by"]) == ("fired", "laptop", "laptop")
    assert said["said_at"] is not None
    assert (cut["state"], cut["claimed_by"], cut["said_by"], cut["said_at"]) == ("fired", "laptop", None, None)
    table = (await asyncio.to_thread(parla, "reminders", "list", "--all")).stdout
    assert "said by laptop" in table and "claimed by laptop, not said to its end yet" in table


def test_the_list_names_the_time_zone_of_its_times(parla, monkeypatch):
    """The times were printed with no zone: a user whose PARLA_TIME_ZONE differs from the machine's
    (or who reads the list on another device) could not tell which 17:00 it meant."""
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setenv("PARLA_TIME_ZONE", "Europe/Rome")
    added = parla("reminders", "add", "call my sister", "--at", "tomorrow at 17:00").stdout
    assert "17:00:00 CET" in added or "17:00:00 CEST" in added, added
    table = parla("reminders", "list").stdout
    assert "Europe/Rome" in table and ("17:00:00 CET" in table or "17:00:00 CEST" in table), table
    (listed,) = json.loads(parla("reminders", "list", "--json").stdout)
    assert listed["local_zone"] == "Europe/Rome" and listed["due_local"].endswith(("CET", "CEST"))


def test_a_text_longer_than_the_bound_is_refused(parla):
    too_long = parla("reminders", "add", "x" * 1_000_000, "--at", "in 10 minutes", ok=False)
    assert too_long.exit_code == 1 and "at most 500 characters" in too_long.output
    assert "No reminders to come" in parla("reminders", "list").stdout


@pytest.mark.tier("audio")
def test_doctor_says_which_voice_says_the_reminders(parla, pulse, gemini, monkeypatch):
    def check(name: str) -> dict[str, str]:
        checks = json.loads(parla("doctor", "--json", ok=False).stdout)
        return next(c for c in checks if c["name"] == name)

    no_key = check("reminder voice")
    assert no_key["outcome"] == "ok" and no_key["detail"].startswith("the offline command flite: no Gemini key")
    monkeypatch.setenv("GEMINI_API_KEY", gemini.api_key)
    monkeypatch.setenv("PARLA_GEMINI_BASE_URL", gemini.base_url)
    monkeypatch.setenv("PARLA_LIVE_VOICE", "Kore")
    own = check("reminder voice")
    assert own["outcome"] == "ok", own
    assert own["detail"].startswith("Parla's own voice: the speech model gemini-3.8-flash-lite-tts (voice Kore)")
    assert check("speech model gemini-3.8-flash-lite-tts")["outcome"] == "ok"
    monkeypatch.setenv("PARLA_LIVE_VOICE", "Nobody")
    refused = check("reminder voice")
    assert refused["outcome"] == "warn" and "refused the words with 400" in refused["detail"]
    assert refused["detail"].endswith("reminders are said by the offline command flite")
    monkeypatch.setenv("PARLA_REMINDER_VOICE", "offline")
    offline = check("reminder voice")
    assert offline["outcome"] == "ok" and "PARLA_REMINDER_VOICE=offline" in offline["detail"]
