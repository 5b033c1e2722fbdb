"""ALSA's underrun messages in Parla's log: real underruns of Parla's speaker (PortAudio over ALSA
over the headless PulseAudio), in a process of their own, whose stderr is read whole."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.tier("audio")

# Parla's speaker plays while the audio thread cannot get the GIL for 0.4 s at a time (a busy
# daemon): each stall is an underrun, which ALSA reports.
_STALLS = """
import logging, sys, time
from parla.daemon.logs import configure_logging
from parla.daemon.settings import Settings
from parla.voice.audio.devices import Speaker

configure_logging(Settings(log_repeat_window_s=float(sys.argv[1]), log_level="INFO", _env_file=None))
speaker = Speaker()
speaker.open()
speaker.play(bytes(24000 * 2 * 8))
sys.setswitchinterval(1.0)
for _ in range(int(sys.argv[2])):
    end = time.monotonic() + 0.4
    while time.monotonic() < end:
        pass
    time.sleep(0.2)
sys.setswitchinterval(0.005)
time.sleep(0.3)
speaker.close()
"""


def _stalls(pulse, window_s: float, stalls: int) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", _STALLS, str(window_s), str(stalls)],
        env={**pulse.env, "PARLA_CONFIG_FILE": "/nonexistent/parla.toml"},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stderr.splitlines()


def test_underruns_are_counted_warnings_of_the_log_not_lines_on_stderr(pulse):
    """The daemon's journal had ALSA's "underrun occurred" 69 times in 15 minutes, printed by ALSA
    past the log and its counting of repeated warnings."""
    lines = _stalls(pulse, window_s=1.0, stalls=6)
    raw = [line for line in lines if line.startswith("ALSA lib")]
    assert raw == [], raw
    written = [
        line for line in lines if "parla.voice.audio.alsa ALSA: underrun occurred (snd_pcm_recover): a gap" in line
    ]
    assert written and all(" WARNING " in line for line in written), lines
    # six stalls in about 3.6 s, one line a second at most: the others counted
    assert len(written) < 6 and any("more like it not logged" in line for line in written), written
