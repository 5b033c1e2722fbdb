"""The cross-chat probe: `python -m bench.profile_probe`. Prints figures only.

Twenty personal facts, each said once in its own chat among 50 chats of small talk (the other 30
chats are small talk only), all stored and compacted as Parla does it (offline embedder and
summarizer, a temporary SQLite store); then a new chat is opened and its context is read. Measured:
- facts whose telling words are in the new chat's context (the profile section);
- small-talk sentences that became profile entries (there should be none);
- the detector on 200 ordinary user sentences that state nothing durable (greetings, moods, what
  happened today, questions, opinions on the moment): how many it takes for a fact.

The facts were written as people say them, before the detector they test was written, and are
not the wording of any rule.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench.report import Table, parse
from parla.memory.compaction.compactor import Compactor
from parla.memory.config import MemoryConfig
from parla.memory.context import load_context
from parla.memory.embedders.offline import OfflineEmbedder
from parla.memory.language.importance import durable_statements
from parla.memory.store.sqlite.store import SQLiteChatStore
from parla.memory.summarizers.extractive import ExtractiveSummarizer
from parla.records.turn import Turn

# (what the user says, the words that show the fact is known)
FACTS: list[tuple[str, str]] = [
    ("Oh by the way, the code for the cabin wifi is bluefinch77.", "bluefinch77"),
    ("My daughter Sofia just started at Greenwood Elementary.", "Greenwood"),
    ("I've been vegetarian for about ten years now.", "vegetarian"),
    ("Our dog's name is Pepper, she's a border collie.", "Pepper"),
    ("I'm allergic to penicillin, found out the hard way.", "penicillin"),
    ("We live in Leeds, near the university.", "Leeds"),
    ("My husband Marco works night shifts at the hospital.", "Marco"),
    ("I play cello in a community orchestra on Thursdays.", "cello"),
    ("My mother's birthday is on the 14th of August.", "14th of August"),
    ("The garage door code is 5521.", "5521"),
    ("I drive a green Skoda Octavia.", "Skoda"),
    ("I work as a pharmacist at a small chemist in town.", "pharmacist"),
    ("My son Luca is seven and obsessed with dinosaurs.", "Luca"),
    ("I can't drink milk, I'm lactose intolerant.", "lactose"),
    ("My best friend is called Priya, we met at university.", "Priya"),
    ("I go swimming every morning at six.", "swimming"),
    ("We're flying to Lisbon on the 3rd of June.", "Lisbon"),
    ("I have type 1 diabetes.", "diabetes"),
    ("My blood type is O negative.", "O negative"),
    ("I'm learning Japanese, I take lessons every Tuesday evening.", "Japanese"),
]

_WHAT = ["a walk", "lunch", "a nap", "some tea", "the dishes", "a long call", "a quick shower", "the shopping"]
_FEEL = ["tired", "sleepy", "bored", "a bit hungry", "in a good mood", "stressed", "cold", "distracted"]
_WHEN = ["today", "this morning", "tonight", "earlier", "this afternoon", "just now", "last night", "yesterday"]
_THING = ["the movie", "the game", "that song", "the news", "the rain", "the traffic", "the soup", "this podcast"]
_ADJ = ["fun", "boring", "strange", "lovely", "too long", "loud", "nice", "awful"]

# Templates of things people say that state nothing lasting about them.
_TEMPLATES = [
    "I just had {what} {when}.",
    "I'm feeling {feel} {when}.",
    "{thing} was {adj} {when}, honestly.",
    "I think {thing} is {adj}.",
    "Can you tell me more about {thing}?",
    "Haha, {thing} was {adj}.",
    "I might go for {what} later.",
    "Thanks, that helps a lot.",
    "Okay, let me think about it for a second.",
    "Ugh, I forgot to do {what} {when}.",
    "We watched {thing} {when} and it was {adj}.",
    "My tea got cold while I was reading {when}.",
    "I'm not sure what to cook {when}.",
    "What do you think about {thing}?",
    "I was {feel} all day {when}.",
]


def small_talk(rng: random.Random, n: int) -> list[str]:
    """`n` user sentences of small talk, distinct, from the templates."""
    seen: set[str] = set()
    out: list[str] = []
    while len(out) < n:
        text = rng.choice(_TEMPLATES).format(
            what=rng.choice(_WHAT),
            feel=rng.choice(_FEEL),
            when=rng.choice(_WHEN),
            thing=rng.choice(_THING),
            adj=rng.choice(_ADJ),
        )
        text = text[0].upper() + text[1:]
        if text not in seen:
            seen.add(text)
            out.append(text)
    return out


@dataclass(frozen=True)
class ProbeResult:
    facts_known: int
    small_talk_in_profile: int
    profile_entries: int
    entries_outside_facts: int  # entries that are no part of a fact's sentence (a fact may give two clauses)
    detector_false_positives: int
    non_durable: int
    seconds: float


def _turns(said: list[str], start: datetime) -> list[Turn]:
    turns = []
    for i, text in enumerate(said):
        turns.append(Turn.of("user", text, created_at=start + timedelta(minutes=2 * i)))
        turns.append(Turn.of("model", "I see, tell me more.", created_at=start + timedelta(minutes=2 * i + 1)))
    return turns


async def run(workdir: Path, seed: int = 7) -> ProbeResult:
    rng = random.Random(seed)
    started = time.perf_counter()
    talk = small_talk(rng, 50 * 8)
    config = MemoryConfig()
    facts_at = set(rng.sample(range(50), len(FACTS)))
    async with SQLiteChatStore(workdir / "probe.db") as store:
        compactor = Compactor(store, ExtractiveSummarizer(), OfflineEmbedder(), config)
        facts = iter(FACTS)
        for n in range(50):
            said = talk[n * 8 : (n + 1) * 8]
            if n in facts_at:
                said.insert(rng.randrange(len(said) + 1), next(facts)[0])
            start = datetime(2026, 1, 1, 9, tzinfo=UTC) + timedelta(days=n)
            chat = (await store.create_chat(turns=_turns(said, start))).chat
            await compactor.compact(chat.id)
        fresh = (await store.create_chat(turns=[Turn.of("user", "Let's plan the weekend.")])).chat
        context = await load_context(store, fresh.id, config)
        shown = "\n".join(item.line for item in context.sections["profile"])
        profile = await store.list_profile()
    known = sum(1 for _, key in FACTS if key in shown)
    from_talk = sum(1 for e in profile if any(t in e.content for t in talk))
    outside = sum(1 for e in profile if not any(e.content.rstrip(".").lower() in said.lower() for said, _ in FACTS))
    non_durable = small_talk(random.Random(seed + 1), 200)
    false_positives = sum(1 for s in non_durable if durable_statements(s))
    return ProbeResult(
        known, from_talk, len(profile), outside, false_positives, len(non_durable), time.perf_counter() - started
    )


def main() -> None:
    _, out = parse(argparse.ArgumentParser(description=__doc__))
    with tempfile.TemporaryDirectory() as tmp:
        result = asyncio.run(run(Path(tmp)))
    table = Table(
        [
            "cross-chat probe",
            "facts in a new chat's context",
            "small-talk sentences among profile entries",
            "entries no part of a fact",
            "non-durable sentences taken for a fact",
            "s",
        ]
    )
    table.row(
        "profile and durable statements",
        f"{result.facts_known}/{len(FACTS)}",
        f"{result.small_talk_in_profile}/{result.profile_entries}",
        f"{result.entries_outside_facts}",
        f"{result.detector_false_positives}/{result.non_durable}",
        f"{result.seconds:.1f}",
    )
    out.table(table)


if __name__ == "__main__":
    main()
