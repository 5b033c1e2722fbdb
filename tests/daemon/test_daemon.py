"""The daemon (`daemon/supervisor.py`) against the Live emulator, the virtual audio devices and a
real SQLite store: activation, the idle timeout, re-activation in the same chat, the control
socket, and a shutdown in the middle of an answer."""

from __future__ import annotations

import asyncio
import gc
import json
import sqlite3
import stat

import pytest
from typer.testing import CliRunner

from parla.daemon.cli import app
from parla.daemon.control import CommandError, DaemonNotRunning, send_command
from parla.daemon.memory_services import open_memory
from parla.daemon.settings import Settings
from parla.memory.imports.importer import import_chat, parse_line
from parla.records.turn import Turn
from tests.conftest import eventually
from tests.daemon.conftest import running
from tests.peers.live_emulator import echo, tone

pytestmark = pytest.mark.tier("audio")


async def ctl(settings: Settings, cmd: str, **args):
    return await send_command(settings.control_socket, cmd, **args)


async def test_activation_idle_timeout_and_reactivation_in_the_same_chat(daemon_settings, live):
    async def script(conn):
        await conn.complete_setup()
        frame = await conn.expect("client_content")
        while not frame.body.get("turn_complete"):  # the seeded history comes first
            frame = await conn.expect("client_content")
        text = frame.body["turns"][-1]["parts"][0]["text"]
        await conn.reply(f"You said {text}", tone(0.2, 600.0))
        await conn.closed.wait()

    live.script = script
    async with running(daemon_settings) as (daemon, mem, chat_id):
        assert (await ctl(daemon_settings, "status"))["state"] == "idle"
        assert live.connections == []  # idle: nothing leaves the machine
        assert (await ctl(daemon_settings, "say", text="hello there"))["result"] == "activating"
        first = await live.wait_connections(1)
        await eventually(lambda: _turns(mem.store, chat_id, 2), timeout=10, what="the first exchange to be stored")
        assert (await ctl(daemon_settings, "status"))["state"] == "active"
        await asyncio.wait_for(first.closed.wait(), 5)  # 1 s of silence closes the session
        closed_at = asyncio.get_running_loop().time()
        await eventually(lambda: daemon.status.state == "idle", what="the daemon to go idle")
        await asyncio.sleep(1.0)
        assert len(live.connections) == 1, "a session opened without an activation"
        assert all(f.received_at <= closed_at for f in first.frames), "a frame was sent after the close"

        assert (await ctl(daemon_settings, "say", text="and again"))["result"] == "activating"
        second = await live.wait_connections(2)
        await eventually(lambda: _turns(mem.store, chat_id, 4), timeout=10, what="the second exchange")
        seeded = second.of_kind("client_content")[0].body  # the same chat's tail, as history
        assert not seeded.get("turn_complete") and "You said hello there" in json.dumps(seeded)
        history = (await mem.store.load_history(chat_id)).full_history
    assert [t.text for t in history] == ["hello there", "You said hello there", "and again", "You said and again"]
    assert daemon.status.sessions == 2


async def test_control_socket_commands(daemon_settings, live):
    env = {"PARLA_CONTROL_SOCKET": str(daemon_settings.control_socket)}
    async with running(daemon_settings) as (daemon, mem, chat_id):
        sock = daemon_settings.control_socket
        assert stat.S_IMODE(sock.stat().st_mode) == 0o600
        assert stat.S_IMODE(sock.parent.stat().st_mode) == 0o700
        status = await ctl(daemon_settings, "status")
        assert (status["state"], status["chat"]["id"], status["muted"]) == ("idle", chat_id, False)
        assert (
            status["outbox"]
            == {"waiting": 0, "refused": 0, "set_aside": 0, "problem": None, "offline": False, "elsewhere": []}
            and status["session_age_s"] is None
        )
        assert status["voice_to_voice"]["session"] == status["voice_to_voice"]["day"]
        assert status["voice_to_voice"]["day"]["turns"] == 0 and status["voice_to_voice"]["day"]["total_p95_ms"] is None

        # two clients at once, one sending garbage first: both get answers, the daemon goes on
        r1, w1 = await asyncio.open_unix_connection(str(sock))
        r2, w2 = await asyncio.open_unix_connection(str(sock))
        w1.write(b"{not json\n")
        w2.write(b'{"cmd": "status"}\n')
        w1.write(b'["cmd"]\n{"cmd": "mute"}\n')
        await asyncio.gather(w1.drain(), w2.drain())
        bad, bad_shape, muted = [json.loads(await r1.readline()) for _ in range(3)]
        assert not bad["ok"] and "malformed request" in bad["error"] and '{"cmd": "status"}' in bad["error"]
        assert not bad_shape["ok"] and muted == {"ok": True, "result": "muted"}
        assert json.loads(await r2.readline())["state"] == "idle"
        for w in (w1, w2):
            w.close()
        assert (await ctl(daemon_settings, "status"))["muted"] is True
        assert (await ctl(daemon_settings, "unmute"))["result"] == "unmuted"
        assert await ctl(daemon_settings, "reminders") == {"result": "ok"}  # `parla reminders` telling it

        with pytest.raises(CommandError, match="unknown command 'dance'.*status"):
            await ctl(daemon_settings, "dance")
        with pytest.raises(CommandError, match="say's `text` must be a non-empty string"):
            await ctl(daemon_settings, "say", text="  ")
        with pytest.raises(CommandError, match="talk's `wait` must be a number of seconds"):
            await ctl(daemon_settings, "talk", wait="soon")

        with pytest.raises(CommandError, match="new's `title` must be a string"):  # was ignored (issue 25, item 17)
            await ctl(daemon_settings, "new", title=5)
        new = await ctl(daemon_settings, "new", title="Kitchen renovation")
        assert new["result"] == "switching" and (await ctl(daemon_settings, "status"))["chat"]["id"] == new["chat_id"]
        turns = ["We are renovating the kitchen: new tiles and cabinets.", "Start with the electrician."]
        await mem.store.append_turns(chat_id, [Turn.of("user", "Planning the trip to Japan, Kyoto temples.")])
        await mem.compactor.compact(chat_id)
        await mem.store.append_turns(new["chat_id"], [Turn.of("user", turns[0]), Turn.of("model", turns[1])])
        await mem.compactor.compact(new["chat_id"])
        switched = await ctl(daemon_settings, "switch", query="the journey to Kyoto")
        assert switched["result"] == "switching" and switched["chat_id"] == chat_id
        assert (await ctl(daemon_settings, "status"))["chat"]["id"] == chat_id
        again = await asyncio.to_thread(CliRunner().invoke, app, ["switch", "the journey to Kyoto"], env=env)
        assert again.exit_code == 0 and again.stdout.startswith("Already in Japan (")
        missing = await asyncio.to_thread(CliRunner().invoke, app, ["switch", "quantum chromodynamics"], env=env)
        assert missing.exit_code == 1 and "`parla new` starts one" in missing.stderr
        assert (await ctl(daemon_settings, "talk"))["result"] == "activating"
        await live.wait_connections(1)
        await eventually(lambda: daemon.status.state == "active", what="the session to open")
        assert (await ctl(daemon_settings, "talk"))["result"] == "already_active"
        assert (await ctl(daemon_settings, "stop"))["result"] == "stopping"
        await eventually(lambda: not sock.exists(), what="the socket to be removed")
    with pytest.raises(DaemonNotRunning, match="parla run"):
        await ctl(daemon_settings, "status")


async def test_a_daemon_that_serves_no_inspector_says_so_to_ui(daemon_settings):
    settings = daemon_settings.model_copy(update={"ui": False})
    async with running(settings):
        with pytest.raises(CommandError, match=r"^the daemon does not serve the inspector \(PARLA_UI=false\)$"):
            await ctl(settings, "ui")


async def test_a_shutdown_during_an_answer_keeps_what_was_said(daemon_settings, live):
    async def script(conn):
        await conn.complete_setup()
        await conn.expect("client_content")
        await conn.reply("Kyoto has many temples and", tone(0.2, 500.0), complete=False)
        await conn.closed.wait()

    live.script = script
    async with running(daemon_settings) as (daemon, mem, chat_id):
        await ctl(daemon_settings, "say", text="tell me about Kyoto")
        await live.wait_connections(1)
        await eventually(
            lambda: daemon._conversation and daemon._conversation.assembler.model_speaking, what="the answer"
        )
        started = asyncio.get_running_loop().time()
        daemon.stop()
    assert asyncio.get_running_loop().time() - started < daemon_settings.shutdown_timeout_s
    async with open_memory(daemon_settings) as mem:
        history = (await mem.store.load_history(chat_id)).full_history
    assert [(t.role, t.text, t.interrupted) for t in history] == [
        ("user", "tell me about Kyoto", False),
        ("model", "Kyoto has many temples and", True),
    ]


async def _turns(store, chat_id, n):
    return (await store.get_chat(chat_id)).turn_count >= n


async def test_a_session_that_cannot_load_its_chat_leaves_the_daemon_running(daemon_settings, live):
    live.script = echo
    async with running(daemon_settings) as (daemon, mem, chat_id):
        await mem.store.delete_chat(chat_id)  # e.g. deleted from another device
        await ctl(daemon_settings, "say", text="hello")
        await eventually(lambda: daemon.status.last_error is not None, what="the failure to be reported")
        status = await ctl(daemon_settings, "status")
        assert status["state"] == "idle" and "no chat matches" in status["last_error"]
        new = await ctl(daemon_settings, "new")
        assert (await ctl(daemon_settings, "say", text="hello again"))["result"] == "activating"
        await live.wait_connections(1)
        assert (await ctl(daemon_settings, "status"))["chat"]["id"] == new["chat_id"]
        # the failed session's text is not lost: each text is answered in turn
        await eventually(lambda: _turns(mem.store, new["chat_id"], 4), timeout=10, what="both answers")
        history = (await mem.store.load_history(new["chat_id"])).full_history
    assert [t.text for t in history] == ["hello", "You said hello.", "hello again", "You said hello again."]


async def test_always_on_opens_at_start_and_waits_before_retrying_a_refused_session(daemon_settings, live):
    async def refuse(conn):
        await conn.close(1008, "API key not valid")

    live.script = refuse
    settings = daemon_settings.model_copy(update={"activation": "always_on", "reconnect_max_delay": 1.0})
    async with running(settings) as (daemon, _, _):
        await live.wait_connections(1)
        await eventually(lambda: daemon.status.last_error is not None, what="the refusal to be reported")
        failed_at = asyncio.get_running_loop().time()
        assert "API key not valid" in (await ctl(settings, "status"))["last_error"]
        await live.wait_connections(2, timeout=5)
        assert asyncio.get_running_loop().time() - failed_at >= 0.8  # not a tight loop


async def test_turns_refused_for_good_are_kept_counted_and_block_no_later_turn(daemon_settings, live):
    live.script = echo
    async with running(daemon_settings) as (_, mem, chat_id):
        await ctl(daemon_settings, "say", text="first")
        await eventually(lambda: _turns(mem.store, chat_id, 2), timeout=10, what="the first exchange")
        await mem.store.delete_chat(chat_id)  # from another device: the open session's chat is gone
        await ctl(daemon_settings, "say", text="second")
        await eventually(lambda: _refused(daemon_settings, 2), timeout=10, what="the refused exchange")
        new = await ctl(daemon_settings, "new", title="Kitchen")
        for n, text in ((2, "third"), (4, "fourth")):
            await ctl(daemon_settings, "say", text=text)
            await eventually(lambda n=n: _turns(mem.store, new["chat_id"], n), timeout=10, what=f"the answer to {text}")
        status = await ctl(daemon_settings, "status")
        assert status["refused_turns"] == 2 and "no chat matches" in status["last_error"]
        env = {"PARLA_CONTROL_SOCKET": str(daemon_settings.control_socket)}
        shown = await asyncio.to_thread(CliRunner().invoke, app, ["status"], env=env)
        assert "refused turns kept locally: 2" in shown.stdout
    async with open_memory(daemon_settings) as mem:
        history = (await mem.store.load_history(new["chat_id"])).full_history
        kept = mem.refused.read()
    assert [t.text for t in history] == ["third", "You said third.", "fourth", "You said fourth."]
    assert [(k.chat_id, k.turn.text) for k in kept] == [(chat_id, "second"), (chat_id, "You said second.")]
    doctor = await asyncio.to_thread(
        CliRunner().invoke, app, ["doctor", "--json"], env={"PARLA_STORE_PATH": str(daemon_settings.store_path)}
    )
    (check,) = [c for c in json.loads(doctor.stdout) if c["name"] == "refused turns"]
    assert check["outcome"] == "warn" and check["detail"].startswith("2 turns the store did not take")


async def test_unreadable_server_messages_and_a_broken_store_never_end_the_daemon(daemon_settings, live):
    async def script(conn):
        if conn.index < 2:
            await conn.complete_setup()
            await conn.send_raw(b'{"serverContent": ')  # broken JSON: the connection cannot go on
            await conn.closed.wait()
        else:
            await echo(conn)

    live.script = script
    settings = daemon_settings.model_copy(update={"reconnect_attempts": 1, "reconnect_delay": 0.05})
    async with running(settings) as (daemon, mem, chat_id):
        await ctl(settings, "say", text="hello")
        await live.wait_connections(2)
        await eventually(lambda: daemon.status.state == "idle" and daemon.status.sessions == 1, what="giving up")
        status = await ctl(settings, "status")
        assert "could not be read" in status["last_error"] and status["state"] == "idle"
        await ctl(settings, "say", text="hello again")
        await eventually(lambda: _turns(mem.store, chat_id, 3), timeout=10, what="the next exchange")
        await eventually(lambda: daemon.status.state == "idle", what="the idle timeout")
        with sqlite3.connect(settings.store_path) as other:  # another program writes a row no Parla writes
            other.execute(
                "INSERT INTO pins (id, chat_id, content, importance, pin_type, created_at) "
                "VALUES ('p', ?, 'x', 5, 'manual', 'not a time')",
                (chat_id,),
            )
        await ctl(settings, "say", text="and now?")
        await eventually(lambda: daemon.status.sessions == 3 and daemon.status.state == "idle", what="the failure")
        status = await ctl(settings, "status")
        assert "Invalid isoformat string: 'not a time'" in status["last_error"] and status["state"] == "idle"
        assert status["restarts"] == 1  # not a StoreError: the supervisor's loop logged it and went on
        await ctl(settings, "say", text="still there?")  # after the delay the daemon listens again
        await eventually(lambda: daemon.status.sessions == 4, what="another try")
    # what no session could answer is stored as said (the chat's table of turns was never broken)
    assert [t.text for t in (await _history(settings, chat_id))] == [
        "hello",
        "hello again",
        "You said hello again.",
        "and now?",
        "still there?",
    ]


async def test_stray_model_audio_after_the_turn_does_not_keep_the_session_open(daemon_settings, live):
    async def script(conn):
        await conn.complete_setup()
        await conn.expect("client_content")
        await conn.reply("Done.", tone(0.05))
        await conn.model_audio(tone(0.04))  # no turnComplete follows it
        await conn.closed.wait()

    live.script = script
    settings = daemon_settings.model_copy(update={"model_silence_s": 0.3})
    async with running(settings) as (daemon, _, _):
        await ctl(settings, "say", text="go")
        first = await live.wait_connections(1)
        await asyncio.wait_for(first.closed.wait(), settings.idle_timeout + settings.model_silence_s + 3)
        await eventually(lambda: daemon.status.state == "idle", what="the daemon to go idle")


async def _refused(settings, n):
    return (await ctl(settings, "status"))["refused_turns"] >= n


async def _history(settings, chat_id):
    async with open_memory(settings) as mem:
        return (await mem.store.load_history(chat_id)).full_history


async def test_switch_by_id_prefix_or_title_goes_to_that_chat(daemon_settings, live):
    env = {"PARLA_CONTROL_SOCKET": str(daemon_settings.control_socket)}
    async with running(daemon_settings) as (_, mem, chat_id):
        ids = []
        for title, text in [
            ("Kyoto in April", "Planning a trip to Kyoto in April."),
            ("Kyoto in May", "Kyoto again in May."),
        ]:
            chat = (await mem.store.create_chat(title=title, turns=[Turn.of("user", text)])).chat
            await mem.compactor.compact(chat.id)
            ids.append(chat.id)
        for ref, target in [(ids[1], ids[1]), (ids[0][:8], ids[0]), ("kyoto in may", ids[1])]:
            answer = await ctl(daemon_settings, "switch", query=ref)
            assert answer["result"] == "switching" and answer["chat_id"] == target, ref
            assert (await ctl(daemon_settings, "status"))["chat"]["id"] == target
        line = json.dumps({"id": "osaka-2026", "title": "Osaka", "turns": [{"role": "user", "text": "Osaka food."}]})
        imported = await import_chat(mem.store, parse_line(1, line))
        answer = await ctl(daemon_settings, "switch", query="osaka-2026")  # the id it was imported with
        assert answer["result"] == "switching" and answer["chat_id"] == imported.chat_id
        by_cli = await asyncio.to_thread(CliRunner().invoke, app, ["switch", chat_id[:6]], env=env)
        assert by_cli.exit_code == 0 and by_cli.stdout.startswith("Switched to Japan ("), by_cli.output


async def test_say_tells_whether_the_text_was_answered_and_stores_it_when_no_session_can_open(daemon_settings, live):
    env = {"PARLA_CONTROL_SOCKET": str(daemon_settings.control_socket)}

    async def refuse(conn):
        await conn.close(1008, "API key not valid")

    live.script = refuse
    async with running(daemon_settings) as (_, mem, chat_id):
        failed = await asyncio.to_thread(CliRunner().invoke, app, ["say", "remember the milk", "--wait", "10"], env=env)
        assert failed.exit_code == 1, failed.output
        assert "not answered: " in failed.stderr and "API key not valid" in failed.stderr
        assert "your text is stored in the chat, unanswered" in failed.stderr
        history = (await mem.store.load_history(chat_id)).full_history
        assert [(t.role, t.text, t.source) for t in history] == [("user", "remember the milk", "text")]

        async def answer(conn):
            await conn.complete_setup()
            frame = await conn.expect("client_content")
            while not frame.body.get("turn_complete"):  # the seeded history comes first
                frame = await conn.expect("client_content")
            await conn.reply("Milk is on the list.", tone(0.2, 600.0))
            await conn.closed.wait()

        live.script = answer
        answered = await asyncio.to_thread(CliRunner().invoke, app, ["say", "and eggs", "--wait", "10"], env=env)
        assert answered.exit_code == 0 and answered.stdout == "Answered: Milk is on the list.\n", answered.output
        history = (await mem.store.load_history(chat_id)).full_history
        assert [t.text for t in history] == ["remember the milk", "and eggs", "Milk is on the list."]


async def test_a_key_makes_gemini_the_embedder_and_the_daemon_reembeds_in_the_background(daemon_settings, live):
    offline = daemon_settings.model_copy(update={"embedder": "offline"})
    async with open_memory(offline) as mem:
        line = json.dumps(
            {"id": "bread", "turns": [{"role": "user", "text": "My sourdough starter smells of acetone."}]}
        )
        imported = await import_chat(mem.store, parse_line(1, line))
        await mem.compactor.compact(imported.chat_id)
        assert (await mem.store.embedder_info())[0].startswith("wordllama")
    assert daemon_settings.embedder == "auto" and daemon_settings.embedder_in_use == "gemini"
    async with running(daemon_settings) as (_, mem, _):
        await mem.reembedder.wait()
        status = await ctl(daemon_settings, "status")
        assert status["reembed"]["state"] == "done" and status["reembed"]["previous"].startswith("wordllama")
        assert status["reembed"]["done"] == status["reembed"]["total"] > 0
        assert await mem.store.embedder_info() == ("gemini-gemini-embedding-001-768", 768)
        found = await mem.search.search("the bread starter that smells odd")
        assert "sourdough" in found.candidates[0].matched_text


async def test_what_the_daemon_loaded_before_ready_is_out_of_the_collectors_full_passes(daemon_settings):
    # a full pass walks every object the collector tracks: the daemon's modules, models and
    # settings would otherwise be walked again, in the middle of a recall, each time one runs
    class Loaded:
        pass

    before = Loaded()
    assert any(o is before for o in gc.get_objects())
    async with running(daemon_settings):
        assert gc.get_freeze_count() > 0
        assert not any(o is before for o in gc.get_objects())
        after = Loaded()
        assert any(o is after for o in gc.get_objects())
    # a daemon run inside another program (these tests) gives its heap back to the collector
    assert gc.get_freeze_count() == 0
    assert any(o is before for o in gc.get_objects())
