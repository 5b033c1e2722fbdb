"""The inspector's profile page in a real headless chromium: what Parla knows about the user,
edited, forgotten, restored and added to through the store's profile API."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from parla.records.profile import ProfileEntry

pytestmark = pytest.mark.tier("browser")


async def test_the_profile_page_lists_edits_forgets_restores_and_adds(browser, served):
    store = served.mem.store
    known = len(await store.list_profile())  # what compaction found in the sample's chats
    await store.save_profile(
        [
            ProfileEntry(content="I live in Turin", importance=7, subject="home", origin="user"),
            ProfileEntry(content="My daughter is called <b>Sofia</b>", importance=8, origin="user"),
        ]
    )
    page = await browser.page()

    def use_the_page() -> None:
        page.goto(served.url)
        page.get_by_role("link", name="What Parla knows about you").click()
        entries = page.get_by_test_id("profile-entry")
        expect(entries).to_have_count(known + 2)
        # markup is text
        daughter = entries.filter(has=page.locator("input[value='My daughter is called <b>Sofia</b>']"))
        expect(daughter).to_have_count(1)
        assert page.locator("b", has_text="Sofia").count() == 0

        daughter.get_by_label("entry").fill("My daughter is called Sofia Maria")
        daughter.get_by_role("button", name="Save").click()
        expect(page.get_by_test_id("note")).to_have_text("Edited: My daughter is called Sofia Maria")

        page.get_by_label("new entry", exact=True).fill("I moved to Milan")
        page.get_by_label("about the new entry", exact=True).fill("home")
        page.get_by_role("button", name="Add").click()
        expect(page.get_by_test_id("note")).to_have_text("Added: I moved to Milan")
        expect(page.get_by_test_id("profile-earlier").filter(has_text="I live in Turin")).to_contain_text("replaced")

        milan = page.get_by_test_id("profile-entry").filter(has=page.locator("input[value='I moved to Milan']"))
        milan.get_by_role("button", name="Forget").click()
        expect(page.get_by_test_id("note")).to_have_text("Forgot: I moved to Milan")
        expect(page.get_by_test_id("profile-entry")).to_have_count(known + 1)
        page.get_by_test_id("profile-earlier").filter(has_text="I moved to Milan").get_by_role(
            "button", name="Restore"
        ).click()
        expect(page.get_by_test_id("note")).to_have_text("Restored: I moved to Milan")
        expect(page.get_by_test_id("profile-entry")).to_have_count(known + 2)

        assert page.problems == []

    await browser.run(use_the_page)
    mine = [e.content for e in await store.list_profile() if e.origin == "user"]
    assert mine == ["My daughter is called Sofia Maria", "I moved to Milan"]
    await browser.close_page(page)
