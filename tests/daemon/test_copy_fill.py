"""The daemon fills this device's copy with every chat on Supabase in the background, chats other
devices wrote included, so that while Supabase is away a switch or a search finds them too, as they
were at the last fill; `parla status` says when that was. Two devices on one Supabase project (the
PostgREST shim over real Postgres); the second one's daemon runs the fill."""

from __future__ import annotations

import asyncio
from datetime import datetime

import pytest
from pydantic import SecretStr
from typer.testing import CliRunner

from parla.daemon.cli import app
from parla.daemon.settings import Settings
from parla.daemon.stores import open_store
from parla.records.turn import Turn
from tests.conftest import eventually
from tests.daemon.conftest import running
from tests.daemon.test_daemon import ctl

pytestmark = pytest.mark.tier("audio")

TEMPLE = [
    Turn.of("user", "Tomorrow we walk to the golden pavilion at Kinkaku-ji, early before the crowds."),
    Turn.of("model", "Go at nine: the pavilion opens then and the pond reflects it best in the morning light."),
]


def device(supabase, user: str, settings: Settings, name: str, **more: object) -> Settings:
    folder = settings.store_path.parent / name
    return settings.model_copy(
        update={
            "store": "supabase",
            "store_path": folder / "parla.db",
            "control_socket": folder / "run" / "ctl.sock",
            "supabase_url": supabase.url,
            "supabase_service_key": SecretStr(supabase.service_key),
            "supabase_user_id": user,
            "supabase_retry_attempts": 1,
            "supabase_recheck_s": 60.0,
            **more,
        }
    )


async def test_a_chat_only_another_device_wrote_is_found_offline_after_a_fill(supabase, gemini, daemon_settings):
    ada = supabase.shim.create_user("ada@example.com")
    laptop = device(supabase, ada, daemon_settings, "laptop")
    async with open_store(laptop) as store:  # the other device
        temple = (await store.create_chat(title="Temple day", turns=TEMPLE)).chat.id
        for n in range(3):
            await store.create_chat(title=f"Errand {n}", turns=[Turn.of("user", f"buy {n} apples")])
    phone = device(
        supabase,
        ada,
        daemon_settings,
        "phone",
        supabase_fill_every_s=3600.0,
        supabase_fill_after_s=0.0,
        supabase_fill_pause_s=0.0,
    )
    async with running(phone, "On the phone") as (_, mem, _chat):
        try:

            async def filled() -> dict | None:
                fill = (await ctl(phone, "status"))["copy_fill"]
                return fill if fill["state"] == "done" else None

            fill = await eventually(filled, timeout=20, what="the copy to be filled")
            assert (fill["chats_done"], fill["chats_total"]) == (5, 5) and fill["error"] is None
            started = datetime.fromisoformat(fill["filled_at"])
            shown = await asyncio.to_thread(
                CliRunner().invoke, app, ["status"], env={"PARLA_CONTROL_SOCKET": str(phone.control_socket)}
            )
            held = f"local copy: every chat on Supabase as of {started.astimezone():%Y-%m-%d %H:%M}"
            assert held in shown.stdout, shown.stdout

            # the phone offline: Supabase away (the switch is answered from the copy) and Gemini too (the
            # request cannot be embedded, so search goes by the words of the copied turns and titles)
            supabase.shim.refuse()
            gemini.drop_next(1000)
            switched = await ctl(phone, "switch", query="the walk to the golden pavilion")
            assert (switched["result"], switched.get("chat_id"), switched.get("offline")) == (
                "switching",
                temple,
                True,
            ), switched
            history = await mem.store.load_history(temple)
            assert [t.text for t in history.full_history] == [t.text for t in TEMPLE]
        finally:
            supabase.shim.recover()


async def test_without_a_fill_such_a_chat_is_not_found_offline(supabase, gemini, daemon_settings):
    """PARLA_SUPABASE_FILL_EVERY_S=0: the copy holds what this device wrote or read, and says so."""
    ada = supabase.shim.create_user("ada@example.com")
    async with open_store(device(supabase, ada, daemon_settings, "laptop")) as store:
        await store.create_chat(title="Temple day", turns=TEMPLE)
    phone = device(supabase, ada, daemon_settings, "phone", supabase_fill_every_s=0.0)
    async with running(phone, "On the phone"):
        try:
            fill = (await ctl(phone, "status"))["copy_fill"]
            assert (fill["state"], fill["filled_at"]) == ("waiting", None)
            shown = await asyncio.to_thread(
                CliRunner().invoke, app, ["status"], env={"PARLA_CONTROL_SOCKET": str(phone.control_socket)}
            )
            assert "local copy: not yet every chat on Supabase" in shown.stdout, shown.stdout
            supabase.shim.refuse()
            gemini.drop_next(1000)
            assert (await ctl(phone, "switch", query="the walk to the golden pavilion"))["result"] == "none"
        finally:
            supabase.shim.recover()
