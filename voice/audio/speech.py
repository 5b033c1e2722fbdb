"""Text said offline, for what Parla says with no conversation open (a reminder at its time): a
speech command writes a WAV file, read here and resampled to the speaker's rate.

The command is a template (`PARLA_REMINDER_SPEECH_COMMAND`): `{text}` and `{wav}` are replaced in
each of its words, so `flite -voice slt -t {text} -o {wav}` (the default) or
`espeak-ng -v it -w {wav} {text}` (Italian) work; no shell runs it.
"""

from __future__ import annotations

import asyncio
import shlex
import tempfile
import wave
from contextlib import suppress
from pathlib import Path

import numpy as np

from ..config import SPEAKER_RATE
from ..errors import SpeechFailed

_TIMEOUT_S = 20.0


def command_words(template: str, text: str, wav: Path) -> list[str]:
    return [w.replace("{text}", text).replace("{wav}", str(wav)) for w in shlex.split(template)]


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
        words = command_words(template, text, wav)
        try:
            proc = await asyncio.create_subprocess_exec(
                *words, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE
            )
        except OSError as e:
            raise SpeechFailed(f"cannot run the speech command {words[0]!r} ({e}); install it (e.g. flite)") from e
        try:
            async with asyncio.timeout(_TIMEOUT_S):
                _, err = await proc.communicate()
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
