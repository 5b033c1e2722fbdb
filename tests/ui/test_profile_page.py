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
        daughter = entries.filter(has=page.get_by_text("My daughter is called <b>Sofia</b>", exact=True))
        expect(daughter).to_have_count(1)
        assert page.locator("b", has_text="Sofia").count() == 0

        daughter.get_by_label("entry").fill("My daughter is called Sofia Maria")
        daughter.get_by_label("entry").press("Enter")  # saves, as in a one-line field
        expect(page.get_by_test_id("note")).to_have_text("Edited: My daughter is called Sofia Maria")

        page.get_by_label("new entry", exact=True).fill("I moved to Milan")
        page.get_by_label("about the new entry", exact=True).fill("home")
        page.get_by_role("button", name="Add").click()
        expect(page.get_by_test_id("note")).to_have_text("Added: I moved to Milan")
        expect(page.get_by_test_id("profile-earlier").filter(has_text="I live in Turin")).to_contain_text("replaced")

        milan = page.get_by_test_id("profile-entry").filter(has=page.get_by_text("I moved to Milan", exact=True))
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


async def test_each_entry_is_shown_whole_in_a_narrow_window(browser, served):
    # each entry's text was cut in a one-line input (issue 42, item 18)
    long = (
        "I live in Turin, in the old town near the river, with my wife Anna, our two cats and a piano "
        "that nobody has tuned since we moved in three years ago"
    )
    await served.mem.store.save_profile([ProfileEntry(content=long, importance=9, origin="user")])
    page = await browser.page()

    def look() -> None:
        page.set_viewport_size({"width": 800, "height": 900})
        page.goto(f"{served.url}profile")
        entries = page.get_by_test_id("profile-entry").get_by_label("entry", exact=True)
        expect(entries.first).to_have_value(long)
        hidden = entries.evaluate_all(
            "fields => fields.filter(f => f.scrollWidth > f.clientWidth + 1 || f.scrollHeight > f.clientHeight + 1)"
            ".map(f => f.value)"
        )
        assert hidden == [], hidden
        box = entries.first.bounding_box()
        assert box is not None and box["x"] + box["width"] <= 800  # inside the window, no sideways scroll
        assert page.problems == []

    await browser.run(look)
    await browser.close_page(page)
