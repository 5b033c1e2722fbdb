"""Invented chats for the inspector's tests, its screenshot and its bench: stored through the real
store and compacted by the real compactor (offline summarizer and embedder), so the pages show
real summaries, facts, pins and search scores."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from parla.memory.compaction.compactor import Compactor
from parla.memory.config import MemoryConfig
from parla.memory.store.protocol import ChatStore
from parla.memory.summarizers.extractive import ExtractiveSummarizer
from parla.records.embedding import Embedder
from parla.records.pins import Pin
from parla.records.turn import Turn

START = datetime(2026, 10, 2, 18, 0, tzinfo=UTC)
XSS_TITLE = '<script>document.title="owned"</script><img src=x onerror=alert(1)>'

JAPAN = [
    ("user", "I want to plan two weeks in Japan in April, mostly Kyoto and Tokyo, with a day in Nara."),
    ("model", "April is cherry blossom season, so book the ryokan in Kyoto early; Nara is an easy day trip."),
    ("user", "My budget is about 3,000 euros without the flights, and I prefer trains to buses."),
    ("model", "A 14-day Japan Rail Pass costs around 450 euros and covers the Shinkansen between the cities."),
    ("user", "Remind me that my passport expires in March 2027, so it is still valid for the trip."),
    ("model", "Noted: the passport is valid until March 2027, well past the April trip."),
    ("user", "Which ryokan in Kyoto has an onsen and is near Gion?"),
    ("model", "Several small ryokan near Gion have private baths; ask for a room with a garden view."),
    ("user", "I would also like to see the deer park in Nara early in the morning before the crowds."),
    ("model", "Take the first Kintetsu train from Kyoto and you will reach the deer park before eight."),
    ("user", "Should I fly into Haneda or Narita from Milan?"),
    ("model", "Haneda is closer to central Tokyo; from Milan most connections arrive at Narita though."),
]
SOURDOUGH = [
    ("user", "My sourdough starter smells of acetone after three days in the fridge."),
    ("model", "That smell means it is hungry: feed it twice a day at room temperature for two days."),
    ("user", "I use rye flour and tap water, the kitchen is about 19 degrees."),
    ("model", "Rye is great; at 19 degrees expect slower rises, so give it eight hours between feeds."),
]
GARDEN = [
    ("user", "The tomato seedlings on the balcony have yellow leaves after the cold night."),
    ("model", "Cold stress turns the lower leaves yellow; bring them in when nights fall below ten degrees."),
]


def turns_of(lines: list[tuple[str, str]], start: datetime) -> list[Turn]:
    return [Turn.of(role, text, created_at=start + timedelta(minutes=i)) for i, (role, text) in enumerate(lines)]  # type: ignore[arg-type]


def small_config() -> MemoryConfig:
    # small windows so a dozen turns already have a rolling summary, chunks, facts and a meta summary
    return MemoryConfig(summary_window_size=8, tail=4, chunk_size=2, meta_every=2, prompt_memory_budget=3000)


async def fill(store: ChatStore, embedder: Embedder, config: MemoryConfig) -> dict[str, str]:
    """The invented chats, compacted; their ids by name."""
    compactor = Compactor(store, ExtractiveSummarizer(), embedder, config)
    ids: dict[str, str] = {}
    for name, title, lines, days in (
        ("japan", "Two weeks in Japan", JAPAN, 0),
        ("sourdough", "Sourdough starter", SOURDOUGH, 3),
        ("garden", "Balcony tomatoes", GARDEN, 9),
        ("xss", XSS_TITLE, GARDEN[:1], 20),
    ):
        chat = (await store.create_chat(title=title, turns=turns_of(lines, START - timedelta(days=days)))).chat
        await compactor.compact(chat.id)
        ids[name] = chat.id
    await store.add_pin(Pin(chat_id=ids["japan"], content="Passport valid until March 2027", importance=8))
    await store.add_pin(Pin(chat_id=ids["japan"], content="Prefers trains to buses", importance=4, pin_type="auto"))
    return ids
