"""Fact retention: `python -m bench.fact_retention [--quick]`. Prints its figures; asserts nothing.

Twenty facts of several kinds (a name, codes, an allergy, a medication, family, dates, decisions,
preferences, where the user lives and works) are each said once by the user, spread over every
depth of a synthetic chat of 400, 1,000 and 5,000 turns. The chat is imported and compacted
offline (extractive summarizer, offline embedder), and the probe counts the facts whose words are
in the memory context the live model gets, within the prompt budget. The same chats are also
measured with auto pins and important turns turned off (the context as it was before them): the
baseline of the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import tempfile
import time
from pathlib import Path

from bench.memory import synthetic_turns
from bench.profile_probe import FACTS as PROBE_FACTS
from bench.report import Report, Table, parse
from parla.memory.compaction.compactor import Compactor
from parla.memory.config import MemoryConfig
from parla.memory.context import load_context
from parla.memory.embedders.offline import OfflineEmbedder
from parla.memory.store.sqlite.store import SQLiteChatStore
from parla.memory.summarizers.extractive import ExtractiveSummarizer
from parla.records.turn import Part, Turn

# (what the user says once, the words the context must hold for the fact to count as kept)
PLANTED = [
    ("By the way, my name is Ingrid Halvorsen.", "Halvorsen"),
    ("The garage door code is 7351, in case I ask you later.", "7351"),
    ("I'm allergic to penicillin, quite badly actually.", "penicillin"),
    ("My flight to Reykjavik is on October 14.", "Reykjavik"),
    ("My son is called Matthias.", "Matthias"),
    ("I take metformin 500 mg twice a day.", "metformin"),
    ("My birthday is on February 2.", "February 2"),
    ("I've decided to sell my old Volvo before winter.", "Volvo"),
    ("I'm vegan, so no animal products at all.", "vegan"),
    ("I live in Tartu these days.", "Tartu"),
    ("My wife's name is Keiko.", "Keiko"),
    ("The wifi password is bluefalcon88.", "bluefalcon88"),
    ("I have asthma, so no dusty hikes for me.", "asthma"),
    ("My dentist appointment is on July 9 at 4.", "dentist"),
    ("I really prefer aisle seats on long flights.", "aisle"),
    ("I'm 47 years old now.", "47 years"),
    ("We decided to adopt a greyhound next spring.", "greyhound"),
    ("I have three daughters.", "three daughters"),
    ("I work as a radiographer at the county hospital.", "radiographer"),
    ("I never eat cilantro, it tastes like soap to me.", "cilantro"),
]
SIZES = (400, 1000, 5000)
EMBEDDER = OfflineEmbedder()
WITH = MemoryConfig()
# important turns alone, and the context as it was before auto pins, the profile and important turns
TURNS_ONLY = MemoryConfig(auto_pins=False, profile_auto=False)
WITHOUT = MemoryConfig(auto_pins=False, profile_auto=False, context_important_budget=0)


def planted_chat(size: int, seed: int, facts: list[tuple[str, str]] = PLANTED) -> tuple[list[Turn], list[int]]:
    """A synthetic chat of `size` turns with each planted fact said by the user at its own depth,
    from the first turns to the last ones."""
    turns = synthetic_turns(random.Random(seed), size, seed)
    depths = []
    for i, (said, _) in enumerate(facts):
        at = int(i * (size - 2) / (len(facts) - 1)) // 2 * 2  # a user's turn (even index)
        turns[at] = turns[at].model_copy(update={"parts": [Part(text=said)]})
        depths.append(at + 1)
    return turns, depths


async def probe(
    size: int, config: MemoryConfig, folder: Path, seed: int, facts: list[tuple[str, str]] = PLANTED
) -> tuple[int, int, int, float]:
    """(facts kept, context tokens, its budget, seconds to import and compact)."""
    turns, _ = planted_chat(size, seed, facts)
    async with SQLiteChatStore(folder / f"{size}-{config.auto_pins}-{config.context_important_budget}.db") as store:
        started = time.perf_counter()
        chat = (await store.create_chat(turns=turns)).chat
        await Compactor(store, ExtractiveSummarizer(), EMBEDDER, config).compact(chat.id)
        seconds = time.perf_counter() - started
        context = await load_context(store, chat.id, config)
    rendered = context.render()
    kept = sum(1 for _, words in facts if words.lower() in rendered.lower())
    return kept, context.total_tokens, context.budget, seconds


async def main(out: Report, quick: bool, facts: list[tuple[str, str]]) -> None:
    sizes = SIZES[:2] if quick else SIZES
    n = len(facts)
    table = Table(
        [
            "turns",
            "kept",
            "context tokens",
            "important turns alone (no auto pins)",
            "neither (the context before them)",
            "import + compaction s",
        ],
        title=f"fact retention: {n} planted facts said once at every depth, imported and compacted offline",
    )
    with tempfile.TemporaryDirectory() as tmp:
        for size in sizes:
            kept, tokens, budget, seconds = await probe(size, WITH, Path(tmp), size, facts)
            quoted, _, _, _ = await probe(size, TURNS_ONLY, Path(tmp), size, facts)
            before, _, _, _ = await probe(size, WITHOUT, Path(tmp), size, facts)
            table.row(
                size,
                f"{kept}/{n} ({kept / n:.0%})",
                f"{tokens}/{budget}",
                f"{quoted}/{n}",
                f"{before}/{n} ({before / n:.0%})",
                f"{seconds:.1f}",
            )
    out.table(table)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="400 and 1,000 turns only")
    parser.add_argument(
        "--facts",
        choices=["planted", "probe"],
        default="planted",
        help="the facts written with the rules (planted), or bench.profile_probe's, written apart from them",
    )
    args, out = parse(parser)
    asyncio.run(main(out, args.quick, PROBE_FACTS if args.facts == "probe" else PLANTED))
