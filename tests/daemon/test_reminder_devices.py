"""Which device says a reminder, with two devices of one account on one Supabase database (two
PostgREST peers over it, each device with its local copy) and each device's real scheduler: the
device it was set on says it at its time; another device says it only when that one has not after
the handoff; when several race for it, the atomic claim lets exactly one say it. One whose saying
was cut off on the laptop is said again by the laptop when it starts within the takeover time,
and by the desktop when the laptop does not."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from parla.daemon.reminders import ReminderScheduler
from parla.memory.store.local_copy import LocalCopyStore
from parla.records.reminder import Reminder
from parla.records.turn import utcnow
from tests.conftest import eventually
from tests.memory.store.test_two_devices import device, shims  # noqa: F401 - the peers' fixture

pytestmark = pytest.mark.tier("postgres")

HANDOFF_S = 1.5
TAKEOVER_S = 2.0


def scheduler(
    store: LocalCopyStore,
    name: str,
    said: list[tuple[str, str]],
    *,
    cut: bool = False,
    takeover_s: float = TAKEOVER_S,
) -> ReminderScheduler:
    """`name`'s scheduler; with `cut`, each saying starts and never ends (its stop cuts it off)."""

    async def say(reminder: Reminder, words: str) -> None:
        said.append((name, words))
        if cut:
            await asyncio.Event().wait()

    return ReminderScheduler(
        store, name, say, asyncio.Event(), handoff_s=HANDOFF_S, takeover_s=takeover_s, recheck_s=0.5
    )


def soon(text: str, on: str, seconds: float = 1.0) -> Reminder:
    return Reminder(text=text, due_at=utcnow() + timedelta(seconds=seconds), device=on)


async def test_the_device_it_was_set_on_says_it_and_the_other_stays_silent(shims, tmp_path):  # noqa: F811
    said: list[tuple[str, str]] = []
    async with device(shims[0], tmp_path, "laptop") as laptop, device(shims[1], tmp_path, "desktop") as desktop:
        reminder = await laptop.add_reminder(soon("stand-up meeting", "laptop"))
        async with scheduler(laptop, "laptop", said), scheduler(desktop, "desktop", said):
            await eventually(lambda: said, timeout=5, what="the reminder said")
            await asyncio.sleep(HANDOFF_S + 1.0)  # past the desktop's turn too
        (stored,) = await desktop.list_reminders(history=True)
    assert said == [("laptop", "Reminder: stand-up meeting")]
    assert stored.id == reminder.id and stored.claimed_by == "laptop"


async def test_a_device_that_is_off_is_covered_by_another_after_the_handoff(shims, tmp_path):  # noqa: F811
    said: list[tuple[str, str]] = []
    async with device(shims[0], tmp_path, "laptop") as laptop, device(shims[1], tmp_path, "desktop") as desktop:
        reminder = await laptop.add_reminder(soon("take the pills", "laptop"))  # then the laptop is closed
        async with scheduler(desktop, "desktop", said):
            await asyncio.sleep(1.2)  # due, but the laptop's turn
            assert said == []
            await eventually(lambda: said, timeout=HANDOFF_S + 2, what="the desktop to say it")
        assert (await laptop.list_reminders(history=True))[0].claimed_by == "desktop"
    assert said == [("desktop", "Reminder: take the pills")]
    assert reminder.device == "laptop"


async def test_devices_racing_for_a_reminder_say_it_once(shims, tmp_path):  # noqa: F811
    said: list[tuple[str, str]] = []
    async with device(shims[0], tmp_path, "laptop") as laptop, device(shims[1], tmp_path, "desktop") as desktop:
        # set on a phone that runs no daemon: both computers' turns come at the same moment
        await laptop.add_reminder(soon("from the phone", "phone", seconds=0.5))
        for _ in range(5):
            await laptop.add_reminder(soon("another", "phone", seconds=0.5))
        async with scheduler(laptop, "laptop", said), scheduler(desktop, "desktop", said):
            await eventually(lambda: len(said) >= 6, timeout=HANDOFF_S + 5, what="every reminder said")
            await asyncio.sleep(1.0)
        stored = await desktop.list_reminders(history=True)
    assert len(said) == 6
    assert sorted(words for _, words in said) == ["Reminder: another"] * 5 + ["Reminder: from the phone"]
    assert {r.claimed_by for r in stored} <= {"laptop", "desktop"} and all(r.state == "fired" for r in stored)


async def test_cut_off_on_a_laptop_that_never_starts_again_the_desktop_says_it_after_the_takeover(
    shims,  # noqa: F811
    tmp_path,
):
    said: list[tuple[str, str]] = []
    async with device(shims[0], tmp_path, "laptop") as laptop, device(shims[1], tmp_path, "desktop") as desktop:
        await laptop.add_reminder(soon("call the plumber", "laptop", seconds=0.2))
        async with scheduler(desktop, "desktop", said):
            async with scheduler(laptop, "laptop", said, cut=True):
                await eventually(lambda: said, timeout=5, what="the laptop to begin saying it")
            # the laptop lost power while saying it; the desktop waits out the takeover time
            (cut,) = await laptop.remote.list_reminders(history=True)
            await eventually(lambda: len(said) == 2, timeout=TAKEOVER_S + 3, what="the desktop to say it")

            async def marked() -> bool:
                return all(r.said_at is not None for r in await desktop.remote.list_reminders(history=True))

            await eventually(marked, timeout=5, what="the desktop's mark")
        async with scheduler(laptop, "laptop", said):  # the laptop back, much later: said already
            await asyncio.sleep(1.2)
        (stored,) = await laptop.list_reminders(history=True)
    assert said == [("laptop", "Reminder: call the plumber"), ("desktop", "Reminder: call the plumber")]
    assert stored.claimed_by == "desktop" and stored.said_at is not None
    assert cut.claimed_by == "laptop" and cut.said_at is None and cut.fired_at and stored.fired_at
    assert (stored.fired_at - cut.fired_at).total_seconds() >= TAKEOVER_S  # taken up once stale, not before


async def test_cut_off_on_a_laptop_that_starts_again_in_time_only_the_laptop_says_it_again(
    shims,  # noqa: F811
    tmp_path,
):
    said: list[tuple[str, str]] = []
    async with device(shims[0], tmp_path, "laptop") as laptop, device(shims[1], tmp_path, "desktop") as desktop:
        await laptop.add_reminder(soon("feed the cat", "laptop", seconds=0.2))
        # a takeover time the laptop's restart is well within, on a loaded machine too
        takeover_s = 2 * TAKEOVER_S
        async with scheduler(laptop, "laptop", said, cut=True):
            await eventually(lambda: said, timeout=5, what="the laptop to begin saying it")
        async with (
            scheduler(laptop, "laptop", said, takeover_s=takeover_s),
            scheduler(desktop, "desktop", said, takeover_s=takeover_s),
        ):
            await eventually(lambda: len(said) == 2, timeout=5, what="the laptop to say it again")
            await asyncio.sleep(takeover_s + 0.5)  # past the first claim's takeover time: renewed, and said
        (stored,) = await desktop.list_reminders(history=True)
    assert said == [("laptop", "Reminder: feed the cat")] * 2
    assert stored.claimed_by == "laptop" and stored.said_at is not None
