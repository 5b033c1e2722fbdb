"""The inspector's reminders page in a real headless chromium: the reminders to come with their
time and chat, those said (and by which device) or cancelled, one set and one cancelled through
the store's reminder API."""

from __future__ import annotations

from datetime import timedelta

import pytest
from playwright.sync_api import expect

from parla.records.reminder import Reminder
from parla.records.turn import utcnow

pytestmark = pytest.mark.tier("browser")


async def test_the_reminders_page_lists_sets_and_cancels(browser, served):
    store = served.mem.store
    chat_id = served.ids[next(iter(served.ids))]
    soon = utcnow() + timedelta(hours=2)
    await store.add_reminder(
        Reminder(text="call my <b>sister</b>", due_at=soon, time_zone="Europe/Rome", chat_id=chat_id, device="laptop")
    )
    dentist = await store.add_reminder(Reminder(text="the dentist", due_at=soon + timedelta(days=1)))
    said = await store.add_reminder(Reminder(text="tea is ready", due_at=utcnow(), kind="timer"))
    await store.claim_reminder(said.id, "desktop")
    await store.mark_reminder_said(said.id, "desktop")
    cut = await store.add_reminder(Reminder(text="the oven", due_at=utcnow() - timedelta(minutes=1)))
    await store.claim_reminder(cut.id, "laptop")  # and the laptop lost power while saying it
    page = await browser.page()

    def use_the_page() -> None:
        page.goto(served.url)
        page.get_by_role("link", name="Reminders").click()
        coming = page.get_by_test_id("reminder")
        expect(coming).to_have_count(2)
        sister = coming.filter(has_text="call my <b>sister</b>")  # markup is text
        expect(sister).to_contain_text("Europe/Rome")
        expect(sister).to_contain_text("on laptop")
        assert page.locator("b", has_text="sister").count() == 0
        done = page.get_by_test_id("reminder-done")
        expect(done.filter(has_text="tea is ready")).to_contain_text("said")
        expect(done.filter(has_text="tea is ready")).to_contain_text("by desktop")
        expect(done.filter(has_text="the oven")).to_contain_text("by laptop, not said to its end")

        page.get_by_label("new reminder", exact=True).fill("water the plants")
        page.get_by_label("when", exact=True).fill("in 3 hours")
        page.get_by_role("button", name="Set").click()
        expect(page.get_by_test_id("note")).to_contain_text("water the plants")
        expect(page.get_by_test_id("reminder")).to_have_count(3)

        coming.filter(has_text="the dentist").get_by_role("button", name="Cancel").click()
        expect(page.get_by_test_id("note")).to_have_text("Cancelled: the dentist")
        expect(page.get_by_test_id("reminder")).to_have_count(2)
        expect(page.get_by_test_id("reminder-done").filter(has_text="the dentist")).to_contain_text("cancelled")

        page.get_by_label("new reminder", exact=True).fill("never")
        page.get_by_label("when", exact=True).fill("whenever")
        page.get_by_role("button", name="Set").click()
        expect(page.get_by_test_id("error")).to_contain_text("could not read")
        assert page.problems == []

    await browser.run(use_the_page)
    assert [r.text for r in await store.list_reminders()] == ["call my <b>sister</b>", "water the plants"]
    assert (await store.list_reminders(history=True))[0].id == dentist.id and served.mem.reminder_wake.is_set()
    await browser.close_page(page)
