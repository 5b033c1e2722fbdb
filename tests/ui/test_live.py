"""The inspector served by the running daemon, against the Live emulator: the page shows the
daemon's state, each turn as it is stored, and follows a switch the model makes with its tool;
`parla ui` prints the running daemon's address, and without a daemon serves the page itself."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys

import httpx
import pytest
from playwright.sync_api import expect

from parla.daemon.control import send_command
from parla.records.turn import Turn
from tests.daemon.conftest import daemon_settings, running  # noqa: F401 - the daemon's fixture
from tests.peers.live_emulator import tone, typed_turn

pytestmark = pytest.mark.tier("browser")


async def test_a_live_turn_and_a_spoken_switch_appear_on_the_page(browser, daemon_settings, live, gemini, caplog):  # noqa: F811
    caplog.set_level("INFO")
    gemini.ground("Light rain in Turin.", [("meteo.it", "https://www.meteo.it/torino")])
    switched: list[str] = []

    async def script(conn):
        await conn.complete_setup()
        while True:
            try:
                text = await typed_turn(conn, timeout=3600)
            except AssertionError:
                return
            if "weather" in text:  # the model looks it up, then says the answer
                await conn.tool_call({"id": f"w{conn.index}", "name": "look_up", "args": {"question": text}})
                answer = (await conn.expect("tool_response")).body["function_responses"][0]["response"]
                await conn.reply(answer["answer"], tone(0.05))
            elif "sourdough" in text:  # the model switches with its tool, as after a spoken request
                await conn.tool_call({"id": f"s{conn.index}", "name": "switch_chat", "args": {"chat_id": switched[0]}})
                await conn.expect("tool_response")
                await conn.reply("Switching to the sourdough chat.", tone(0.05))
            else:
                await conn.reply(f"You said {text}.", tone(0.05))

    live.script = script
    async with running(daemon_settings) as (daemon, mem, _):
        other = await mem.store.create_chat(title="Sourdough", turns=[Turn.of("user", "My starter smells of acetone.")])
        switched.append(other.chat.id)
        served = await send_command(daemon_settings.control_socket, "ui")
        page = await browser.page()

        def opened() -> None:
            page.goto(served["url"] + "live")  # the daemon's chat, followed
            expect(page.get_by_test_id("chat-title")).to_have_text("Japan")
            expect(page.get_by_test_id("live-state")).to_have_text("idle")

        await browser.run(opened)
        await send_command(daemon_settings.control_socket, "mute")
        await browser.run(lambda: expect(page.get_by_test_id("live-state")).to_have_text("idle (muted)"))
        await send_command(daemon_settings.control_socket, "say", text="hello there")
        history = page.get_by_test_id("full-history")
        await browser.run(lambda: expect(history).to_contain_text("You said hello there."))
        await browser.run(lambda: expect(history.locator("li")).to_have_count(2))  # stored turns only, once each
        await send_command(daemon_settings.control_socket, "say", text="what's the weather in Turin?")

        def sourced() -> None:
            answer = history.locator("li").nth(3)
            expect(answer).to_contain_text("Light rain in Turin.")
            expect(answer.get_by_test_id("sources").get_by_role("link", name="meteo.it")).to_have_attribute(
                "href", re.compile(r"^https://vertexaisearch\.cloud\.google\.com/grounding-api-redirect/")
            )

        await browser.run(sourced)

        await send_command(daemon_settings.control_socket, "say", text="take me to the sourdough chat")

        def followed() -> None:
            expect(page).to_have_url(re.compile(re.escape(other.chat.id) + r"\?follow=1$"))
            expect(page.get_by_test_id("chat-title")).to_have_text("Sourdough")
            expect(page.locator("#live-chat")).to_have_text("Sourdough")
            assert page.problems == []

        await browser.run(followed)
        await browser.close_page(page)
        token = served["url"].split("/")[3]
        async with httpx.AsyncClient() as http:  # the chat the daemon talks in is not deleted under it
            refused = await http.post(
                f"{served['url']}chats/{other.chat.id}/delete", data={"token": token, "confirm": "yes"}
            )
        assert "the+daemon+is+talking+in+this+chat" in refused.headers["location"]
        assert (await mem.store.get_chat(other.chat.id)).title == "Sourdough"
    assert daemon.status.sessions >= 1
    # what the daemon logged (the test's own HTTP client logs its requests, token and all)
    logged = "\n".join(r.getMessage() for r in caplog.records if not r.name.startswith(("httpx", "httpcore")))
    assert served["address"] in logged and served["url"].split("/")[3] not in logged


@pytest.mark.tier("process")
async def test_parla_ui_without_a_daemon_serves_the_page_itself(tmp_path):
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("PARLA_")},
        "PYTHONPATH": os.pathsep.join(sys.path),
        "PARLA_CONFIG_FILE": str(tmp_path / "none.toml"),
        "PARLA_STORE_PATH": str(tmp_path / "parla.db"),
        "PARLA_CONTROL_SOCKET": str(tmp_path / "ctl.sock"),
        "PARLA_UI_PORT": "0",
        "PARLA_UI_TOKEN_FILE": str(tmp_path / "ui-token"),
        "PARLA_SUMMARIZER": "offline",
    }
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "parla.daemon", "ui", "--no-open", env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        url = (await asyncio.wait_for(proc.stdout.readline(), 60)).decode().strip()
        token = (tmp_path / "ui-token").read_text().strip()
        assert re.fullmatch(rf"http://127\.0\.0\.1:\d+/{re.escape(token)}/", url)
        async with httpx.AsyncClient() as http:
            page = await http.get(url)
            assert page.status_code == 200 and "the daemon is not running" in page.text
    finally:
        proc.terminate()
        _, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 0, err.decode()
