"""The PulseAudio fixture gives the test process its devices whatever ran before it: a test that
imported sounddevice before the server started (pyroomacoustics imports it) left PortAudio with
no devices, and every audio test after it failed."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.tier("process")

ROOT = Path(__file__).resolve().parents[3]


def test_the_devices_are_found_when_sounddevice_was_imported_before_the_server(tmp_path):
    probe = tmp_path / "test_order.py"
    probe.write_text(
        textwrap.dedent(
            """
            import pytest

            pytestmark = pytest.mark.tier("audio")  # the suite's conftest asks every module for one


            def test_a_imports_sounddevice_first():
                import sounddevice  # noqa: F401


            def test_b_then_opens_the_servers_devices(pulse):
                import sounddevice

                assert sounddevice.query_devices(kind="input")["name"]
                assert sounddevice.query_devices(kind="output")["name"]
            """
        )
    )
    env = {k: v for k, v in os.environ.items() if k != "PULSE_SERVER"}
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:randomly",
            "-p",
            "no:cacheprovider",
            "-p",
            "tests.conftest",
            "--rootdir",
            str(tmp_path),
            str(probe),
        ],
        check=False,
        cwd=ROOT,
        env={**env, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
