"""A headless PulseAudio with virtual devices, so sounddevice opens real streams in CI:

- sink `spk` (24 kHz mono): the default output; its monitor `spk.monitor` is what was played;
- sink `micfeed` (16 kHz mono) and the virtual source `mic` on its monitor: the default input, so
  what a test plays into `micfeed` is what the microphone hears.

`norewinds=1` keeps the first recorded callback on time. The server must be running before the
first `import sounddevice` (PortAudio reads the sound configuration once); clients find it through
PULSE_SERVER. `room()` puts speaker and microphone in one room: what the speaker plays reaches
the microphone again after a delay and quieter (PulseAudio's module-loopback from `spk.monitor`
into `micfeed`, mixed there with whatever a test plays as the user's voice). Test speech comes
from flite (16 kHz voices `slt` / `kal16`), which offline
recognisers understand.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import threading
import time
import wave
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

CONFIG = """\
load-module module-native-protocol-unix auth-anonymous=1 auth-cookie-enabled=0
load-module module-null-sink sink_name=spk rate=24000 channels=1 format=s16le norewinds=1
load-module module-null-sink sink_name=micfeed rate=16000 channels=1 format=s16le norewinds=1
load-module module-virtual-source source_name=mic master=micfeed.monitor format=s16le rate=16000 channels=1
set-default-sink spk
set-default-source mic
"""

MISSING = (
    "the audio tests need PulseAudio, pacat and flite: run `bash scripts/test.sh` (it installs "
    "pulseaudio pulseaudio-utils libportaudio2 libasound2-plugins flite), or install them yourself"
)


class PulseServer:
    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.runtime = directory / "run"
        self.socket = self.runtime / "pulse" / "native"
        self.env = {
            **os.environ,
            "HOME": str(directory),
            "XDG_RUNTIME_DIR": str(self.runtime),
            "PULSE_SERVER": f"unix:{self.socket}",
        }

    def start(self) -> PulseServer:
        for tool in ("pulseaudio", "pacat", "flite"):
            if shutil.which(tool) is None:
                raise RuntimeError(f"{tool} is missing: {MISSING}")
        self.runtime.mkdir(parents=True, exist_ok=True)
        script = self.dir / "parla-test.pa"
        script.write_text(CONFIG)
        subprocess.run(
            ["pulseaudio", "--daemonize=yes", "--exit-idle-time=-1", "--disallow-exit", "-n", f"--file={script}"],
            env=self.env,
            check=True,
            capture_output=True,
        )
        deadline = time.monotonic() + 5
        while subprocess.run(["pactl", "info"], env=self.env, capture_output=True, check=False).returncode != 0:
            if time.monotonic() > deadline:
                raise RuntimeError("PulseAudio did not start within 5 s")
            time.sleep(0.05)
        return self

    def stop(self) -> None:
        subprocess.run(["pulseaudio", "--kill"], env=self.env, capture_output=True, check=False)

    async def play_into_mic(self, pcm: bytes, latency_ms: int = 100) -> None:
        """Play 16 kHz mono int16 audio into `micfeed`, so the default microphone hears it."""
        proc = await asyncio.create_subprocess_exec(
            *pacat_command("--playback", "micfeed", 16000, latency_ms=latency_ms),
            stdin=asyncio.subprocess.PIPE,
            env=self.env,
        )
        await proc.communicate(pcm)
        if proc.returncode != 0:
            raise RuntimeError(f"pacat --playback exited with {proc.returncode}")

    @contextmanager
    def room(self, delay_ms: int = 90, gain_db: float = -20.0) -> Iterator[None]:
        """While inside, the microphone hears the speaker `delay_ms` later at `gain_db` (an echo
        path of loudspeakers on a desk: 30-150 ms, -10 to -30 dB), mixed with the user's speech.
        Measured here: the lag is exact to the millisecond and the gain to 0.01 dB."""
        module = self._pactl(
            "load-module",
            "module-loopback",
            "source=spk.monitor",
            "sink=micfeed",
            f"latency_msec={delay_ms}",
            "source_dont_move=true",
            "sink_dont_move=true",
            "adjust_time=0",
        ).strip()
        try:
            inputs = json.loads(self._pactl("--format=json", "list", "sink-inputs"))
            (loop,) = [i["index"] for i in inputs if str(i.get("owner_module")) == module]
            self._pactl("set-sink-input-volume", str(loop), f"{gain_db}dB")
            yield
        finally:
            self._pactl("unload-module", module)

    def _pactl(self, *args: str) -> str:
        return subprocess.run(["pactl", *args], env=self.env, check=True, capture_output=True, text=True).stdout

    def record_speaker(self) -> MonitorRecorder:
        return MonitorRecorder(self.env).start()


def pacat_command(mode: str, device: str, rate: int, latency_ms: int = 5) -> list[str]:
    # A playback with a tiny buffer underruns, and the server fills the gap with silence: the
    # player gets 100 ms; the recorder 5 ms, so arrival times are close to play times.
    return [
        "pacat",
        mode,
        "-d",
        device,
        "--format=s16le",
        f"--rate={rate}",
        "--channels=1",
        "--raw",
        f"--latency-msec={latency_ms}",
    ]


@dataclass
class MonitorRecorder:
    """Records `spk.monitor` (what the speaker played) with the arrival time of every 5 ms piece,
    so a test can tell when sound stopped on the wall clock the code under test also uses."""

    env: dict[str, str]
    chunks: list[tuple[float, bytes]] = field(default_factory=list)
    _proc: subprocess.Popen[bytes] | None = None
    _thread: threading.Thread | None = None

    def start(self) -> MonitorRecorder:
        self._proc = subprocess.Popen(
            pacat_command("--record", "spk.monitor", 24000), stdout=subprocess.PIPE, env=self.env
        )
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()
        return self

    def _read(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        while piece := os.read(fd, 240):
            self.chunks.append((time.monotonic(), piece))

    def stop(self) -> MonitorRecorder:
        if self._proc is not None:
            self._proc.terminate()
            self._proc.wait()
        if self._thread is not None:
            self._thread.join()
        return self

    @property
    def audio(self) -> bytes:
        return b"".join(piece for _, piece in self.chunks)

    def first_tone(self, frequency: float, after: float, level: float = 1000.0) -> float | None:
        """When `frequency` was first heard louder than `level` (amplitude) after `after`, in
        20 ms windows (a single-bin DFT each): a cue or a reply told apart by its pitch."""
        rate = 24000
        window: list[np.ndarray] = []
        for at, piece in self.chunks:
            window.append(np.frombuffer(piece, "<i2").astype(np.float64))
            samples = np.concatenate(window)
            if samples.size < rate // 50:
                continue
            window = []
            t = np.arange(samples.size) / rate
            amplitude = 2 * abs(np.dot(samples, np.exp(-2j * np.pi * frequency * t))) / samples.size
            if at >= after and amplitude > level:
                return at
        return None

    def last_sound_at(self, threshold: int = 200) -> float | None:
        loud = [t for t, piece in self.chunks if np.abs(np.frombuffer(piece, "<i2")).max(initial=0) > threshold]
        return loud[-1] if loud else None


def speech(text: str, voice: str = "slt", pad_ms: int = 300) -> bytes:
    """`text` spoken by flite as 16 kHz mono int16, with silence around it."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "speech.wav"
        subprocess.run(["flite", "-voice", voice, "-t", text, "-o", str(path)], check=True, capture_output=True)
        with wave.open(str(path)) as w:
            assert w.getframerate() == 16000 and w.getsampwidth() == 2 and w.getnchannels() == 1
            pcm = w.readframes(w.getnframes())
    pad = bytes(16 * 2 * pad_ms)
    return pad + pcm + pad
