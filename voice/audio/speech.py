"""What Parla says with no conversation open (a reminder at its time), as audio for the speaker:
in Parla's own voice (the speech model, `speech_model.py`) when it has one, else, and whenever the
model fails or does not answer within its time, by an offline speech command that writes a WAV file.

Why the speech model and not the live session when one is open: the Live model says its own words,
not the reminder's text as it was set, and a turn sent to it mid-answer interrupts the answer
(gemini-3.8-live: client content with turn_complete interrupts generation) and becomes a turn of the
chat; the speech model reads the text verbatim, in the same prebuilt voice, and its audio goes to the
speaker like the offline command's, so "said to its end" is measured the same way (the speaker
drained). The price is one small request per reminder.

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
import logging
import shlex
import tempfile
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from ..errors import SpeechFailed
from .speech_model import SpeechModel
from .wav import speaker_pcm_of_wav

log = logging.getLogger(__name__)

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
        return await asyncio.to_thread(speaker_pcm_of_wav, wav, "the speech command")


@dataclass(frozen=True)
class Said:
    pcm: bytes  # mono int16 at the speaker's rate
    by: str  # "the speech model gemini-3.8-flash-lite-tts (voice Puck)", "the offline command flite"


class Speech:
    """Says words as audio: by `model` when there is one and it answers within `timeout_s`, else by
    the offline `command`. Only a failure of the command too is a `SpeechFailed`."""

    def __init__(self, command: str, model: SpeechModel | None, timeout_s: float) -> None:
        self.command = command
        self.model = model
        self.timeout_s = timeout_s

    @property
    def offline(self) -> str:
        words = shlex.split(self.command)
        return f"the offline command {Path(words[0]).name}" if words else f"the offline command {self.command!r}"

    async def say(self, text: str) -> Said:
        if self.model is not None:
            try:
                async with asyncio.timeout(self.timeout_s):
                    return Said(await self.model.spoken(text), str(self.model))
            except TimeoutError:
                why = self.model.late(self.timeout_s)
            except SpeechFailed as e:
                why = str(e)
            except Exception as e:  # an answer the SDK could not read: the words are said all the same
                log.exception("%s failed", self.model, extra={"event": "speech_model_failed"})
                why = f"{self.model} failed ({type(e).__name__})"
            log.warning("%s; %s says the words", why, self.offline, extra={"event": "speech_model_unused"})
        return Said(await spoken(text, self.command), self.offline)
