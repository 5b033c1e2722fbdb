"""What Parla learns about the user, on conversations nobody here wrote:
`python -m bench.persona --data PATH` (PATH: Synthetic-Persona-Chat's validation split, a CSV; see
bench/persona_data.py, which also holds the matching rule). Prints figures only.

Each conversation is stored as an imported chat would be (User 1 is the user, User 2 the other
speaker, in the model's place), in a store of its own (one person's profile), and compacted as
Parla does it with the offline embedder and summarizer; then the profile is read. Measured:
- of the user's persona sentences that the user's turns express, the share that some profile
  entry says (both by the matching rule);
- of the profile entries, the share that say none of the user's persona sentences: a durable fact
  the user stated that the persona does not list ("I'm studying psychology"), or a wrong one; the
  persona lists four or five facts and the conversations say many more, so this share is judged by
  hand: `--sample N` prints N entries drawn at random (the same for a seed) to judge;
- the entries that say one of the other speaker's sentences and none of the user's (`--show`
  prints them), and of those the ones the other speaker said first (the user agreeing, "me too");
  the others the user said unprompted (the generated conversations often give the user a fact of
  the other speaker's persona), so they are the user's statements all the same.
With `--folds K`, the figures of each of K folds of conversations drawn at random besides the
whole: the rules learn nothing from the data, so the folds show how much the figures vary from one
set of conversations to another.
The baseline, in the same run: every clause of the user's turns taken as an entry.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench.persona_data import Conversation, Matcher, folds, read_conversations
from bench.report import Table, parse
from parla.memory.compaction.compactor import Compactor
from parla.memory.config import MemoryConfig
from parla.memory.embedders.offline import OfflineEmbedder
from parla.memory.language.text import clauses, sentences
from parla.memory.store.sqlite.store import SQLiteChatStore
from parla.memory.summarizers.extractive import ExtractiveSummarizer
from parla.records.turn import Turn


@dataclass
class Scores:
    """The counts the benchmark's figures are made of, summed over conversations."""

    conversations: int = 0
    persona_facts: int = 0
    expressed: int = 0
    reached: int = 0
    entries: int = 0
    persona_entries: int = 0
    other_speaker_entries: int = 0
    echoed: int = 0
    every: list[str] = field(default_factory=list)
    other_speaker: list[str] = field(default_factory=list)
    missed: list[tuple[str, list[str]]] = field(default_factory=list)

    @property
    def recall(self) -> float:
        return self.reached / max(self.expressed, 1)

    @property
    def not_persona_share(self) -> float:
        return 1 - self.persona_entries / max(self.entries, 1)


def chat_turns(conversation: Conversation, start: datetime) -> list[Turn]:
    return [
        Turn.of("user" if who == "user" else "model", text, created_at=start + timedelta(seconds=30 * i))
        for i, (who, text) in enumerate(conversation.turns)
    ]


async def profile_of(conversation: Conversation, workdir: Path, config: MemoryConfig) -> list[str]:
    """The profile a store holds after the conversation is stored and compacted."""
    path = workdir / f"{conversation.index}.db"
    async with SQLiteChatStore(path) as store:
        compactor = Compactor(store, ExtractiveSummarizer(), OfflineEmbedder(), config)
        start = datetime(2026, 1, 1, 9, tzinfo=UTC) + timedelta(days=conversation.index)
        chat = (await store.create_chat(turns=chat_turns(conversation, start))).chat
        await compactor.compact(chat.id)
        entries = [e.content for e in await store.list_profile()]
    path.unlink()
    return entries


def score(conversation: Conversation, entries: list[str], matcher: Matcher, into: Scores) -> None:
    into.conversations += 1
    into.persona_facts += len(conversation.user_persona)
    expressed = matcher.expressed(conversation)
    into.expressed += len(expressed)
    for p in expressed:
        if any(matcher.matches(p, e) for e in entries):
            into.reached += 1
        else:
            said = [t for t in conversation.said_by("user") if matcher.matches(p, t)]
            into.missed.append((p, said))
    for e in entries:
        into.entries += 1
        into.every.append(e)
        if any(matcher.matches(p, e) for p in conversation.user_persona):
            into.persona_entries += 1
        else:
            theirs = [p for p in conversation.other_persona if matcher.matches(p, e)]
            if theirs:
                into.other_speaker_entries += 1
                into.other_speaker.append(e)
                into.echoed += any(echoed(conversation, p, matcher) for p in theirs)


def echoed(conversation: Conversation, persona: str, matcher: Matcher) -> bool:
    """Whether the other speaker said their persona sentence before the user first said it too
    (the user agreeing: "I love dogs too"), rather than the user saying it unprompted."""
    for who, text in conversation.turns:
        if matcher.matches(persona, text):
            return who == "other"
    return False


def every_clause(conversation: Conversation) -> list[str]:
    return [c for t in conversation.said_by("user") for s in sentences(t) for c in clauses(s)]


async def profiles(conversations: list[Conversation], config: MemoryConfig) -> list[list[str]]:
    """Each conversation's profile as Parla keeps it."""
    with tempfile.TemporaryDirectory() as tmp:
        return [await profile_of(c, Path(tmp), config) for c in conversations]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, required=True, help="Synthetic-Persona-Chat's validation split (CSV)")
    parser.add_argument("--limit", type=int, default=None, help="only the first N conversations")
    parser.add_argument("--folds", type=int, default=0, help="also the figures of each of K folds of conversations")
    parser.add_argument("--sample", type=int, default=0, help="print N profile entries drawn at random, to judge")
    parser.add_argument("--seed", type=int, default=41, help="the seed of the sample")
    parser.add_argument(
        "--show", type=int, default=0, help="print the other speaker's entries and N missed facts with their turn"
    )
    args, out = parse(parser)
    conversations = read_conversations(args.data)
    matcher = Matcher(conversations)
    chosen = conversations[: args.limit] if args.limit else conversations
    started = time.perf_counter()
    kept = asyncio.run(profiles(chosen, MemoryConfig()))
    seconds = time.perf_counter() - started
    scores, baseline = Scores(), Scores()
    fold_of = folds(chosen, args.folds) if args.folds else {}
    by_fold = {f: Scores() for f in range(args.folds)}
    for c, entries in zip(chosen, kept, strict=True):
        score(c, entries, matcher, scores)
        score(c, every_clause(c), matcher, baseline)
        if args.folds:
            score(c, entries, matcher, by_fold[fold_of[c.index]])
    table = Table(
        [
            "persona benchmark (User 1 is the user)",
            "conversations",
            "persona facts expressed",
            "reach the profile",
            "profile entries",
            "not persona facts",
            "the other speaker's",
            "of which echoed",
            "s",
        ]
    )
    rows = [("the profile (offline path)", scores, f"{seconds:.0f}"), ("every clause", baseline, "")]
    rows += [(f"the profile, fold {f + 1} of {args.folds}", s, "") for f, s in by_fold.items()]
    for name, s, took in rows:
        table.row(
            name,
            s.conversations,
            f"{s.expressed}/{s.persona_facts}",
            f"{s.recall:.3f}",
            s.entries,
            f"{s.not_persona_share:.3f}",
            s.other_speaker_entries,
            s.echoed,
            took,
        )
    out.table(table)
    rng = random.Random(args.seed)
    for e in rng.sample(scores.every, min(args.sample, len(scores.every))):
        out.line(f"entry: {e}")
    if args.show:
        for e in scores.other_speaker:
            out.line(f"the other speaker's: {e}")
        for p, said in rng.sample(scores.missed, min(args.show, len(scores.missed))):
            out.line(f"missed: {p} <- {said[0][:200] if said else ''}")


if __name__ == "__main__":
    main()
