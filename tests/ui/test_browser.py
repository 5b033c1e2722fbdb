"""The inspector in a real headless chromium: the chats, the switch search with its decision, a
chat's page, corrections (forget and restore a pin, importance, rename, regenerate, delete),
a chat titled with markup shown as text, and no script error on any page (the CSP allows only
the inspector's own files)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from parla.records.turn import Turn, WebSource
from tests.ui.sample import XSS_TITLE

pytestmark = pytest.mark.tier("browser")


async def test_chats_search_and_a_chat_page(browser, served):
    page = await browser.page()

    def chats_and_search() -> None:
        page.goto(served.url)
        expect(page.get_by_test_id("chat-row")).to_have_count(4)
        # the title with markup is text: no script ran, no image tag was made
        expect(page.get_by_role("link", name=XSS_TITLE)).to_be_visible()
        assert page.title() == "Parla memory" and page.locator("img").count() == 0
        page.get_by_role("searchbox").fill("the chat about cherry blossoms and the ryokan in Kyoto")
        page.get_by_role("button", name="Search").click()
        expect(page.get_by_test_id("decision")).to_have_text("switch")
        expect(page.get_by_test_id("reason")).to_contain_text("leads the next by")
        first = page.get_by_test_id("candidate").first
        expect(first).to_contain_text("Two weeks in Japan")
        expect(first.locator(".matched")).not_to_be_empty()
        assert re.search(r"0\.\d{3}", first.inner_text())  # score, similarity and recency shown
        first.get_by_role("link").click()
        expect(page.get_by_test_id("chat-title")).to_have_text("Two weeks in Japan")

    await browser.run(chats_and_search)
    chat = await served.mem.store.get_chat(served.ids["japan"])

    def chat_page() -> None:
        assert page.url.startswith(served.chat_url("japan"))
        expect(page.get_by_test_id("full-history").locator("li")).to_have_count(chat.turn_count)
        # the model's history: the summary turn, then the unsummarised tail
        tail = chat.turn_count - chat.summarized_through
        expect(page.get_by_test_id("assistant-history").locator("li")).to_have_count(tail + 1)
        expect(page.get_by_test_id("rolling-summary")).to_have_text(chat.rolling_summary)
        expect(page.get_by_test_id("summary-1-2")).to_be_attached()
        expect(page.get_by_test_id("fact").first).to_be_visible()
        expect(page.get_by_test_id("pin").first).to_contain_text("Passport valid until March 2027")
        expect(page.get_by_test_id("pin").first.get_by_label("importance")).to_have_value("8")
        expect(page.get_by_test_id("context")).to_contain_text("=== Pinned facts ===")
        assert int(page.get_by_test_id("context-tokens").inner_text()) > 0
        assert page.problems == []

    await browser.run(chat_page)
    long = await served.mem.store.create_chat(title="Long", turns=[Turn.of("user", f"line {i}") for i in range(1, 511)])

    def earlier_turns() -> None:
        page.goto(f"{served.url}chats/{long.chat.id}")
        turns = page.get_by_test_id("full-history").locator("li:not(.more)")
        expect(turns).to_have_count(500)  # the newest; the earlier ones on request
        expect(turns.first).to_have_text("You line 11")
        expect(turns.first).to_have_attribute("data-seq", "11")
        page.get_by_role("link", name="Show earlier turns (10 more)").click()
        expect(turns).to_have_count(510)
        expect(turns.first).to_have_text("You line 1")
        assert page.problems == []

    await browser.run(earlier_turns)
    await browser.close_page(page)


async def test_corrections_go_through_the_memory_api(browser, served):
    store, japan = served.mem.store, served.ids["japan"]
    page = await browser.page()
    before = {s.range.start: s.updated_at for s in await store.list_summaries(japan)}

    def correct() -> None:
        page.goto(served.chat_url("japan"))
        # htmx (shipped in the package, allowed by the CSP) turns the forms into in-place updates:
        # a mark left on the window survives every change below
        page.evaluate("window.notReloaded = typeof htmx === 'object'")
        pin = page.get_by_test_id("pin").filter(has_text="Passport valid")
        pin.get_by_role("button", name="Forget").click()
        expect(page.get_by_test_id("note")).to_have_text("Forgot the pin: Passport valid until March 2027")
        expect(page.get_by_test_id("pin").filter(has_text="Passport valid")).to_have_count(0)
        expect(page.get_by_test_id("context")).not_to_contain_text("Passport valid")
        page.get_by_test_id("forgotten-pin").get_by_role("button", name="Restore").click()
        expect(page.get_by_test_id("note")).to_have_text("Restored the pin: Passport valid until March 2027")
        expect(page.get_by_test_id("pin").filter(has_text="Passport valid")).to_have_count(1)

        pin = page.get_by_test_id("pin").filter(has_text="Prefers trains")
        pin.get_by_label("importance").fill("9.5")
        pin.get_by_role("button", name="Set").click()
        expect(page.get_by_test_id("pin").first).to_contain_text("Prefers trains")  # most important first

        page.get_by_label("title", exact=True).fill("Japan in April <b>2027</b>")
        page.get_by_role("button", name="Rename").click()
        expect(page.get_by_test_id("chat-title")).to_have_text("Japan in April <b>2027</b>")

        page.get_by_test_id("summary-1-2").locator("xpath=preceding-sibling::h3[1]").get_by_role(
            "button", name="Regenerate"
        ).click()
        expect(page.get_by_test_id("note")).to_contain_text("Regenerated 1 chunk summaries, 1 fact blocks")
        page.get_by_label("range to regenerate").fill("3-4x")
        page.get_by_role("button", name="Regenerate summaries and facts").click()
        expect(page.get_by_test_id("error")).to_contain_text("a range is two message numbers like 11-20")
        assert page.evaluate("window.notReloaded") is True
        assert page.problems == []

    await browser.run(correct)
    # the sample's pins (the auto pins compaction made of the sample's turns aside)
    pins = [p for p in await store.list_pins(japan) if not p.content.startswith("The user said")]
    assert [(p.content, p.importance) for p in pins] == [
        ("Prefers trains to buses", 9.5),
        ("Passport valid until March 2027", 8.0),
    ]
    assert await store.list_pins(japan, forgotten=True) == []
    assert (await store.get_chat(japan)).title == "Japan in April <b>2027</b>"
    after = {s.range.start: s.updated_at for s in await store.list_summaries(japan)}
    assert after[1] > before[1] and after[3] == before[3]  # only the chosen range was redone

    def delete() -> None:
        page.goto(served.chat_url("garden"))
        page.get_by_role("button", name="Delete…").click()
        expect(page.get_by_test_id("confirm-delete")).to_contain_text("Balcony tomatoes")
        page.get_by_role("link", name="Keep it").click()
        expect(page.get_by_test_id("confirm-delete")).to_have_count(0)
        page.get_by_role("button", name="Delete…").click()
        page.get_by_role("button", name="Yes, delete it for good").click()
        expect(page.get_by_test_id("note")).to_have_text("Deleted Balcony tomatoes (2 turns).")
        expect(page.get_by_test_id("chat-row")).to_have_count(3)

    await browser.run(delete)
    assert served.ids["garden"] not in {c.id for c in await store.list_chats()}
    await browser.close_page(page)


async def test_a_look_ups_sources_are_shown_with_the_answer(browser, served):
    spoken = Turn.of(
        "model",
        "Light rain tomorrow in Turin, 9 to 14 degrees.",
        sources=[
            WebSource(title="meteo.it", uri="https://vertexaisearch.cloud.google.com/grounding-api-redirect/AbC"),
            WebSource(title='<img src=x onerror="alert(1)">', uri="https://example.org/?a=1&b=2"),
            WebSource(title="not a web page", uri="javascript:alert(1)"),
        ],
    )
    asked = Turn.of("user", "What's the weather tomorrow in Turin?")
    chat = (await served.mem.store.create_chat(title="Weather", turns=[asked, spoken])).chat
    page = await browser.page()

    def chat_page() -> None:
        page.goto(f"{served.url}chats/{chat.id}")
        turns = page.get_by_test_id("full-history").locator("li")
        expect(turns.first.get_by_test_id("sources")).to_have_count(0)  # the question has none
        sources = turns.nth(1).get_by_test_id("sources")
        expect(sources).to_contain_text("Sources: meteo.it")
        expect(sources.get_by_role("link", name="meteo.it")).to_have_attribute(
            "href", "https://vertexaisearch.cloud.google.com/grounding-api-redirect/AbC"
        )
        # a title with markup is text, and an address that is not a web page is no link
        expect(sources.get_by_role("link", name='<img src=x onerror="alert(1)">')).to_have_attribute(
            "href", "https://example.org/?a=1&b=2"
        )
        expect(sources.get_by_role("link")).to_have_count(2)
        expect(sources).to_contain_text("not a web page (javascript:alert(1))")
        assert page.locator("img").count() == 0 and page.problems == []

    await browser.run(chat_page)
    await browser.close_page(page)
