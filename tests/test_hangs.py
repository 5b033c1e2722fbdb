"""A test that hangs ends the run within its time limit, naming itself and where it waits: every
thread's stack (pytest-timeout) and every pending asyncio task's (tests/hangs.py). The check runs
a hanging test with the repository's pytest options and a limit of seconds."""

from __future__ import annotations

import subprocess
import sys
import time
import tomllib

import pytest

from tests.test_layers import ROOT

pytestmark = pytest.mark.tier("process")

HANGING = """
import asyncio

import pytest

pytestmark = pytest.mark.tier("fast")


async def a_request_that_never_comes():
    await asyncio.Event().wait()


async def test_that_hangs():
    while True:
        await asyncio.wait({asyncio.ensure_future(a_request_that_never_comes())})
"""


def test_the_limit_is_set_for_every_test():
    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert 60 <= options["timeout"] <= 600 and options["timeout_method"] == "thread"
    assert "-p tests.hangs" in options["addopts"]


def test_a_hanging_test_fails_the_run_with_its_stacks(tmp_path):
    (tmp_path / "test_hanging.py").write_text(HANGING)
    started = time.monotonic()
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-c", str(ROOT / "pyproject.toml"), "--rootdir", str(ROOT)]
        # the tiers' plugin, which tests/conftest.py hooks in for the files under tests/
        + ["-p", "tests.tiers", "-p", "no:randomly", "-p", "no:cacheprovider", "--timeout", "8"]
        + [str(tmp_path / "test_hanging.py")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    took = time.monotonic() - started
    out = run.stdout + run.stderr
    assert run.returncode != 0 and took < 60, out
    assert "Timeout" in out and "test_that_hangs" in out, out
    # the task's own stack: where the coroutine waits, which the threads' stacks do not show
    assert "asyncio tasks pending" in out and "in a_request_that_never_comes" in out, out
