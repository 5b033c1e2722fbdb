"""The offline speech command (voice/audio/speech.py), run as a reminder runs it."""

from __future__ import annotations

import asyncio
import os
import shlex
import sys

import pytest

from parla.voice.audio.speech import spoken
from parla.voice.errors import SpeechFailed

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


# A speech command that writes 24 kHz audio with one sample per byte of the words it was given:
# from the file `{text_file}` names, or from its standard input.
_WRITER = """
import sys, wave
words = open(sys.argv[1], "rb").read() if sys.argv[1] != "-" else sys.stdin.buffer.read()
with wave.open(sys.argv[2], "wb") as w:
    w.setnchannels(1); w.setsampwidth(2); w.setframerate(24000); w.writeframes(bytes(2 * len(words)))
"""


def _writer(source: str) -> str:
    return f"{shlex.quote(sys.executable)} -c {shlex.quote(_WRITER)} {source} {{wav}}"


async def test_long_words_go_by_file_or_standard_input_whole():
    words = "Reminder: " + "prendi il treno delle 9 — " * 10_000  # 250 KB: past one argument's limit
    for source in ("{text_file}", "-"):
        pcm = await spoken(words, _writer(source))
        assert len(pcm) == 2 * len(words.encode()), source


async def test_words_too_long_for_the_command_line_say_so_and_how_to_pass_them():
    """The command with {text} and a 1 MB text failed with "Argument list too long", and the advice
    was to install flite."""
    with pytest.raises(SpeechFailed) as failed:
        await spoken("x" * 1_000_000, _writer("{text}"))
    message = str(failed.value)
    assert "too long for the command line" in message and "{text_file}" in message
    assert "install" not in message
    with pytest.raises(SpeechFailed, match=r"install it \(e\.g\. flite\)"):
        await spoken("x", "/nonexistent/say {text} {wav}")
