"""Test tiers: every test module says what its tests need with `pytestmark = pytest.mark.tier("NAME")`,
and plain `pytest` runs only the fast tier.

`pytest --tier all` runs every tier, `pytest --tier postgres,audio` the ones named. Without `--tier`,
a test file named on the command line runs whatever its tier (`pytest tests/voice/turns/test_floor.py`
runs it), and a folder gives its fast tier. A module that declares no tier fails collection, and so
does a fast test that uses a slow peer's fixture (SLOW_FIXTURES; a subprocess it starts is not
seen). A test or a parameter may name another tier than its module's (the Supabase half of a test
that runs on both stores): the nearest mark wins. The summary gives each tier's count, the time its tests took and
their CPU time (this process's and that of the child processes it waited for: not a peer server
started once for the session, Postgres or PulseAudio, which runs on after the test)."""

from __future__ import annotations

import os
import time
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path

import pytest

TIERS = {
    "fast": "in-process: SQLite, the Live and Gemini REST emulators, offline models",
    "postgres": "the embedded Postgres with pgvector behind the PostgREST shim: the Supabase store",
    "audio": "headless PulseAudio, real-time audio",
    "process": "parla or daemon processes, kill -9, the wheel install, CLI and server subprocesses",
    "browser": "headless chromium: the memory inspector's pages",
    "scale": "evaluations and benchmarks at size",
}
DEFAULT = "fast"
ALL = "all"
# The session's slow peers, by the fixture that starts them: a test of the fast tier may use none.
SLOW_FIXTURES = {"pg_cluster": "postgres", "supabase": "postgres", "pulse": "audio", "browser": "browser"}
TIER = pytest.StashKey[str]()


@dataclass
class Spent:
    tests: int = 0
    wall: float = 0.0
    cpu: float = 0.0


@dataclass
class Choice:
    tiers: set[str]
    named_files: set[Path]  # files named on the command line without --tier: every tier of them runs
    run: dict[str, Spent]
    left_out: dict[str, int]


CHOICE = pytest.StashKey[Choice]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--tier",
        dest="tier",
        default=None,
        metavar="NAMES",
        help=f"the test tiers to run, comma-separated, or '{ALL}' (default: {DEFAULT}; a test file named "
        f"on the command line runs whatever its tier): {', '.join(TIERS)}",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "tier(name): what the tests need: " + "; ".join(f"{k} = {v}" for k, v in TIERS.items())
    )
    option = config.getoption("tier")
    if option is None:
        tiers, named = {DEFAULT}, named_files(config)
    else:
        names = {name.strip() for name in option.split(",") if name.strip()}
        unknown = names - set(TIERS) - {ALL}
        if unknown or not names:
            raise pytest.UsageError(f"--tier {option}: the tiers are {', '.join(TIERS)} (or {ALL})")
        tiers, named = (set(TIERS) if ALL in names else names), set()
    config.stash[CHOICE] = Choice(tiers, named, {}, {})


def named_files(config: pytest.Config) -> set[Path]:
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        return set()
    paths = (Path(config.invocation_params.dir, arg.split("::")[0]).resolve() for arg in config.args)
    return {path for path in paths if path.is_file()}


def known(mark: pytest.Mark) -> bool:
    return len(mark.args) == 1 and mark.args[0] in TIERS and not mark.kwargs


def tier_of(mark: pytest.Mark, where: str) -> str:
    if not known(mark):
        raise pytest.UsageError(f"{where}: {mark.args} names no test tier: one of {', '.join(TIERS)}")
    return str(mark.args[0])


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    report = yield
    if isinstance(collector, pytest.Module) and report.passed:
        marks = [mark for mark in collector.own_markers if mark.name == "tier"]
        if len(marks) != 1 or not known(marks[0]):
            said = "declares no test tier" if not marks else f"declares {[m.args for m in marks]} for its tier"
            report.outcome = "failed"
            report.longrepr = (
                f"{collector.nodeid} {said}: it needs one `pytestmark = pytest.mark.tier(NAME)`, NAME being "
                "what its tests need: " + "; ".join(f"{k} ({v})" for k, v in TIERS.items())
            )
    return report


def item_tier(item: pytest.Item) -> str:
    """The nearest tier mark: a parameter's, the test's, its class's, its module's."""
    callspec = getattr(item, "callspec", None)
    for mark in callspec.marks if callspec else ():
        if mark.name == "tier":
            return tier_of(mark, item.nodeid)
    mark = item.get_closest_marker("tier")
    if mark is None:  # a module without a tier failed collection already
        raise pytest.UsageError(f"{item.nodeid} has no test tier")
    return tier_of(mark, item.nodeid)


@pytest.hookimpl(trylast=True)  # after -k and -m: the counts are of the tests that run
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    choice = config.stash[CHOICE]
    kept, left = [], []
    for item in items:
        tier = item.stash[TIER] = item_tier(item)
        slow = sorted(set(getattr(item, "fixturenames", ())) & SLOW_FIXTURES.keys())
        if tier == "fast" and slow:
            raise pytest.UsageError(
                f"{item.nodeid} is in the fast tier but uses {', '.join(slow)}: mark it "
                + " or ".join(sorted({SLOW_FIXTURES[name] for name in slow}))
            )
        if tier in choice.tiers or item.path.resolve() in choice.named_files:
            kept.append(item)
            choice.run.setdefault(tier, Spent()).tests += 1
        else:
            left.append(item)
            choice.left_out[tier] = choice.left_out.get(tier, 0) + 1
    if left:
        config.hook.pytest_deselected(items=left)
        items[:] = kept


def pytest_report_header(config: pytest.Config) -> str:
    choice = config.stash[CHOICE]
    chosen = ", ".join(tier for tier in TIERS if tier in choice.tiers)
    others = [tier for tier in TIERS if tier not in choice.tiers]
    line = f"tiers: {chosen}"
    if choice.named_files:
        line += ", and every tier of the test files named"
    if others:
        line += f"; left out: {', '.join(others)} (`pytest --tier {ALL}` runs every tier, `--tier {others[0]}` one)"
    return line


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, object, object]:
    start, times = time.perf_counter(), os.times()
    try:
        return (yield)
    finally:
        end = os.times()
        spent = item.config.stash[CHOICE].run[item.stash[TIER]]
        spent.wall += time.perf_counter() - start
        spent.cpu += sum(end[:4]) - sum(times[:4])  # user and system, this process's and its children's


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    choice = config.stash[CHOICE]
    if not choice.run and not choice.left_out:
        return
    terminalreporter.section("test tiers")
    for tier, needs in TIERS.items():
        if tier in choice.run and config.option.collectonly:
            terminalreporter.write_line(f"{tier:9} {choice.run[tier].tests:5} tests  ({needs})")
        elif tier in choice.run:
            spent = choice.run[tier]
            terminalreporter.write_line(
                f"{tier:9} {spent.tests:5} tests  {spent.wall:7.1f} s  CPU {spent.cpu:7.1f} s  ({needs})"
            )
    if choice.left_out:
        left = ", ".join(f"{tier} ({choice.left_out[tier]})" for tier in TIERS if tier in choice.left_out)
        terminalreporter.write_line(f"left out: {left}; `pytest --tier {ALL}` runs every tier")
