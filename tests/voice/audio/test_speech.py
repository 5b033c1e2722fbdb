"""The offline speech command (voice/audio/speech.py), run as a reminder runs it."""

from __future__ import annotations

import asyncio
import os
import shlex
import sys

import pytest

from parla.voice.audio.speech import spoken

pytestmark = pytest.mark.tier("process")


async def test_a_stop_while_the_command_runs_ends_the_command(tmp_path):
    # A reminder cut off by the daemon's stop left its speech command running behind it.
    pid_file = tmp_path / "pid"
    script = f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(60)"
    template = f"{shlex.quote(sys.executable)} -c {shlex.quote(script)} {{text}} {{wav}}"
    saying = asyncio.create_task(spoken("time to stretch", template))
    async with asyncio.timeout(15):
        while not pid_file.exists() or not pid_file.read_text():
            await asyncio.sleep(0.02)
    pid = int(pid_file.read_text())
    saying.cancel()
    await asyncio.gather(saying, return_exceptions=True)
    assert saying.cancelled()
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return  # gone, and reaped
    raise AssertionError(f"the speech command (pid {pid}) is still running after the stop")
