"""kill -9, the small version of `python -m bench.faults`: a few kills at random moments of
`parla import`, of `parla memory regenerate` and of `parla run` in a live session (typed turns
answered by the Live emulator), each followed by a restart; no acknowledged turn is lost, none is
stored twice, the SQLite file passes integrity_check and the chat's memory compacts again. And the
flood: idle and half-open connections from another user do not take `parla run` down."""

from __future__ import annotations

import random

import pytest

from bench.faults import Figures, LivePeers, compaction_faults, import_faults, live_faults, settings_for
from bench.faults_flood import FLOOD_FILE_LIMIT, FLOOD_LOG_LIMIT, connection_flood
from bench.faults_locked import locked_store_faults
from parla.daemon.memory_services import open_memory

pytestmark = pytest.mark.tier("process")


def _clean(figures: Figures, kills: int) -> None:
    assert figures.kills == kills
    assert figures.checked > 0
    assert (figures.lost, figures.duplicated, figures.integrity_failures, figures.memory_failures) == (0, 0, 0, 0), (
        figures.problems
    )


@pytest.fixture(autouse=True)
def _no_config(tmp_path, monkeypatch):
    monkeypatch.setenv("PARLA_CONFIG_FILE", str(tmp_path / "none.toml"))


async def test_kill_9_during_import(tmp_path):
    _clean(await import_faults(tmp_path, 2, random.Random(1), chats=4, turns=(20, 60)), 2)


async def test_kill_9_during_compaction(tmp_path):
    async with open_memory(settings_for(tmp_path)) as mem:
        figures = await compaction_faults(tmp_path, 2, random.Random(2), mem, chats=1, turns=(150, 160))
    _clean(figures, 2)


async def test_kill_9_during_a_live_session(tmp_path, pulse, live, live_certificate):
    async with open_memory(settings_for(tmp_path)) as mem:
        peers = LivePeers(live, pulse.env["PULSE_SERVER"], live_certificate[0])
        figures = await live_faults(tmp_path, 2, random.Random(3), mem, peers)
    _clean(figures, 2)


async def test_a_flood_of_idle_and_half_open_connections(tmp_path, pulse):
    """The small version of the flood scenario: the daemon (1,024 files at most) keeps answering and
    its log stays short. (The latency bound is the benchmark's to report, not asserted here.)"""
    figures = await connection_flood(tmp_path, pulse.env["PULSE_SERVER"], seconds=4.0)
    assert (figures.status_failures, figures.page_failures, figures.out_of_files) == (0, 0, False), figures.problems
    assert figures.status_s and figures.page_s
    assert figures.closed_by_daemon > 0 and figures.descriptors_peak < FLOOD_FILE_LIMIT
    assert figures.log_growth < FLOOD_LOG_LIMIT


async def test_sigterm_and_kill_9_under_a_held_store_lock_while_say_waits(tmp_path, pulse, live, live_certificate):
    peers = LivePeers(live, pulse.env["PULSE_SERVER"], live_certificate[0])
    figures = await locked_store_faults(tmp_path, 2, random.Random(4), peers)
    _clean(figures, 2)
    assert "1 SIGTERM (1 said on their last line what was kept)" in figures.note, figures.note
