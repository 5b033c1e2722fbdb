"""The control commands' dispatch before the daemon can act (daemon/commands.py), and the `parla
talk` commands waiting for the session to open. The commands acting on a running daemon are
tested through its socket (test_daemon.py, test_talk.py, test_say.py, test_switch.py)."""

from __future__ import annotations

import asyncio

import pytest

from parla.daemon import protocol
from parla.daemon.commands import HANDLERS, WaitingTalks, dispatch
from parla.daemon.errors import CommandError

pytestmark = pytest.mark.tier("fast")


def test_each_message_of_the_protocol_has_its_handler():
    assert list(HANDLERS) == list(protocol.COMMANDS)


async def test_an_unknown_command_is_named_with_the_known_ones_even_while_the_daemon_starts():
    with pytest.raises(CommandError, match="unknown command 'dance'; the daemon knows mute, new, reminders, say"):
        await dispatch(None, "dance", {"cmd": "dance"})


async def test_a_command_before_the_daemon_is_ready_is_told_to_try_again():
    for cmd in HANDLERS:
        with pytest.raises(CommandError, match="the daemon is still starting; try again in a moment"):
            await dispatch(None, cmd, {"cmd": cmd})


async def test_a_waiting_talk_hears_the_session_open_or_nothing_past_its_wait():
    talks = WaitingTalks()
    first, second = (asyncio.create_task(talks.wait(5.0)) for _ in range(2))
    await asyncio.sleep(0)
    talks.settle({"result": "listening"})
    assert await asyncio.gather(first, second) == [{"result": "listening"}] * 2
    assert await talks.wait(0.01) is None
    talks.settle({"result": "failed", "error": "too late"})  # nobody waits: nothing to tell
