"""Text said offline, for what Parla says with no conversation open (a reminder at its time): a
speech command writes a WAV file, read here and resampled to the speaker's rate.

The command is a template (`PARLA_REMINDER_SPEECH_COMMAND`): `{text_file}` (a file holding the
words, UTF-8), `{text}` (the words themselves) and `{wav}` are replaced in each of its words, and
the words are on the command's standard input too, so `flite -voice slt -f {text_file} -o {wav}`
(the default), `espeak-ng -v it -w {wav} -f {text_file}` (Italian) or `... --stdin` work; no shell
runs it. The words go by file because one argument holds at most 128 KiB on Linux and all of them
together about 2 MB ("Argument list too long").
"""

from __future__ import annotations

import asyncio
import errno
import shlex
import tempfile
import wave
from contextlib import suppress
from pathlib import Path

import numpy as np

from ..config import SPEAKER_RATE
from ..errors import SpeechFailed

_TIMEOUT_S = 20.0


def command_words(template: str, text: str, wav: Path, text_file: Path) -> list[str]:
    fields = {"{text_file}": str(text_file), "{text}": text, "{wav}": str(wav)}
    words = []
    for word in shlex.split(template):
        for field, value in fields.items():  # {text_file} before {text}, which it contains
            word = word.replace(field, value)
        words.append(word)
    return words


def _cannot_run(command: str, text: str, e: OSError) -> str:
    if e.errno == errno.E2BIG:
        return (
            f"the words ({len(text)} characters) are too long for the command line of the speech command "
            f"{command!r}: give them as a file, {{text_file}} in PARLA_REMINDER_SPEECH_COMMAND instead of {{text}}"
        )
    if e.errno == errno.ENOENT:
        return f"cannot run the speech command {command!r} ({e}); install it (e.g. flite)"
    return f"cannot run the speech command {command!r} ({e}); check PARLA_REMINDER_SPEECH_COMMAND"


def _resampled(pcm: np.ndarray, rate: int) -> np.ndarray:
    if rate == SPEAKER_RATE or not len(pcm):
        return pcm
    n = int(len(pcm) * SPEAKER_RATE / rate)
    return np.interp(np.arange(n) * rate / SPEAKER_RATE, np.arange(len(pcm)), pcm)


def _read_wav(path: Path) -> bytes:
    with wave.open(str(path)) as w:
        if w.getsampwidth() != 2:
            raise SpeechFailed(f"the speech command wrote {8 * w.getsampwidth()}-bit audio; 16-bit is needed")
        frames = np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.float64)
        mono = frames.reshape(-1, w.getnchannels()).mean(axis=1)
        return np.clip(_resampled(mono, w.getframerate()), -32768, 32767).astype("<i2").tobytes()


async def spoken(text: str, template: str) -> bytes:
    """`text` said by the command, as mono int16 at the speaker's rate."""
    with tempfile.TemporaryDirectory(prefix="parla-speech-") as folder:
        wav = Path(folder) / "speech.wav"
        text_file = Path(folder) / "words.txt"
        await asyncio.to_thread(text_file.write_text, text, encoding="utf-8")
        words = command_words(template, text, wav, text_file)
        try:
            proc = await asyncio.create_subprocess_exec(
                *words,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE,
            )
        except OSError as e:
            raise SpeechFailed(_cannot_run(words[0], text, e)) from e
        try:
            async with asyncio.timeout(_TIMEOUT_S):
                # a command that does not read its input ends all the same: communicate() lets go
                # of a closed pipe
                _, err = await proc.communicate(text.encode())
        except TimeoutError:
            proc.kill()
            await proc.wait()
            raise SpeechFailed(f"the speech command {words[0]!r} took longer than {_TIMEOUT_S:g} s") from None
        except asyncio.CancelledError:  # a stop: the command is not left running behind the daemon
            with suppress(ProcessLookupError):  # it ended meanwhile
                proc.kill()
            await proc.wait()
            raise
        if proc.returncode != 0 or not wav.exists():
            raise SpeechFailed(f"the speech command {words[0]!r} failed: {err.decode(errors='replace').strip()[:200]}")
        try:
            return await asyncio.to_thread(_read_wav, wav)
        except (wave.Error, EOFError) as e:
            raise SpeechFailed(f"the speech command wrote no readable WAV file: {e}") from e
