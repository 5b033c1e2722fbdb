"""Reminders across restarts, with the daemon as its own process on a SQLite store: one due while
the daemon was killed (kill -9) is said at the next start; one set before the kill is said within
1 s of its time by the restarted daemon; one due while the daemon was stopped (SIGTERM, as systemd
stops it) is said at the next start. Each is said once."""

from __future__ import annotations

import asyncio
import signal
import subprocess
from datetime import timedelta

from parla.daemon.control import send_command
from parla.memory.reminders import Reminder
from parla.memory.store.sqlite import SQLiteChatStore
from parla.memory.turn import utcnow
from tests.conftest import eventually
from tests.daemon.conftest import process_env
from tests.daemon.test_daemon_crash import _start
from tests.daemon.test_reminders import heard_after, monotonic_of


async def _stop(proc: subprocess.Popen[bytes], sig: signal.Signals) -> int:
    proc.send_signal(sig)
    return await asyncio.to_thread(proc.wait, 20)


async def test_reminders_survive_kill_9_and_a_stop_and_each_is_said_once(
    pulse, live, gemini, live_certificate, tmp_path
):
    env = process_env(pulse, live, gemini, live_certificate, tmp_path, PARLA_DEVICE_NAME="laptop")
    socket = tmp_path / "ctl.sock"
    store_path = tmp_path / "parla.db"
    recorder = pulse.record_speaker()
    proc = await _start(env, socket)
    try:
        now = utcnow()
        missed = Reminder(text="missed while killed", due_at=now + timedelta(seconds=2), device="laptop")
        later = Reminder(text="said after the restart", due_at=now + timedelta(seconds=25), device="laptop")
        async with SQLiteChatStore(store_path) as store:
            for r in (missed, later):
                await store.add_reminder(r)
        await send_command(socket, "reminders")
        await _stop(proc, signal.SIGKILL)  # before the first is due
        await asyncio.sleep(max(0.0, (missed.due_at - utcnow()).total_seconds()) + 1.0)

        proc = await _start(env, socket)
        started = utcnow()
        # the missed one is said at the start, for about 2 s: over well before the next is due
        assert started < later.due_at - timedelta(seconds=8), f"the restart took too long: {utcnow() - now}"

        async def fired(reminder: Reminder) -> Reminder | None:
            async with SQLiteChatStore(store_path) as store:
                (stored,) = [r for r in await store.list_reminders(history=True) if r.id == reminder.id]
            return stored if stored.state == "fired" else None

        said_missed = await eventually(lambda: fired(missed), timeout=10, what="the missed reminder said at start")
        assert said_missed.claimed_by == "laptop" and said_missed.fired_at is not None
        assert said_missed.fired_at - started < timedelta(seconds=2)

        due = monotonic_of(later.due_at)
        loud = await heard_after(recorder, due, seconds=1.0, timeout=40)
        said_later = await fired(later)
        assert said_later is not None and said_later.fired_at is not None
        lag = (said_later.fired_at - later.due_at).total_seconds()
        assert 0 <= lag <= 1.0, f"claimed {lag:.3f} s after its time"
        assert due - 0.05 <= loud[0] <= due + 1.0, f"heard {loud[0] - due:+.3f} s from its time"

        stopped = Reminder(text="missed while stopped", due_at=utcnow() + timedelta(seconds=1), device="laptop")
        async with SQLiteChatStore(store_path) as store:
            await store.add_reminder(stopped)
        assert await _stop(proc, signal.SIGTERM) == 0  # as systemd stops it; before it is due
        await asyncio.sleep(1.5)
        proc = await _start(env, socket)
        await eventually(lambda: fired(stopped), timeout=10, what="the reminder missed while stopped")
        assert (await send_command(socket, "status"))["reminders_said"] == 1  # only that one in this run
        assert await _stop(proc, signal.SIGTERM) == 0
    finally:
        recorder.stop()
        if proc.poll() is None:
            proc.kill()
