"""The held-apart probe: what Parla learns about the user, measured on facts and small talk written
by someone who never read the rules that read them (tests/data/facts_apart.json: 20 facts said
plainly, 20 said in passing inside a question or an aside, 50 chats of small talk, and 15 turns
about others, or the assistant about itself, that must not be learned).

Each kind of fact is said once, each in one of the 50 small-talk chats, with the turns that must not
be learned in others; every chat is stored and compacted as Parla does it (offline embedder and
summarizer), then a new chat is opened and the profile its context holds is read. This probe was run
once, after the reading was final, and its figures are asserted as they came out: the goal is 19 of
20 of each kind; docs/design/figures.md says what it showed and why a fact was missed.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest

from parla.memory.compaction.compactor import Compactor
from parla.memory.context import load_context
from parla.memory.store.sqlite.store import SQLiteChatStore
from parla.records.turn import Turn
from tests.conftest import T0

pytestmark = pytest.mark.tier("fast")

PROBE = json.loads((Path(__file__).parents[1] / "data" / "facts_apart.json").read_text(encoding="utf-8"))


@dataclass
class Probe:
    known: list[str]
    missed: list[str]
    small_talk_entries: list[str]
    learned_about_others: list[str]
    shown: str


def _chats(kind: str, rng: random.Random) -> list[list[tuple[str, str]]]:
    """The 50 small-talk chats, each fact of `kind` said in one of them (with the assistant's reply),
    and each turn that must not be learned in one of them."""
    chats = [[(t["role"], t["text"]) for t in chat] for chat in PROBE["small_talk"]]
    for fact, n in zip(PROBE[kind], rng.sample(range(len(chats)), len(PROBE[kind])), strict=True):
        at = 2 * rng.randrange(len(chats[n]) // 2 + 1)
        chats[n][at:at] = [("user", fact["turn"]), ("model", fact["reply"])]
    for other, n in zip(
        PROBE["not_about_user"], rng.sample(range(len(chats)), len(PROBE["not_about_user"])), strict=True
    ):
        chats[n].append((other["role"], other["text"]))
    return chats


async def _probe(kind: str, workdir: Path, summarizer, embedder, config) -> Probe:
    rng = random.Random(41)
    async with SQLiteChatStore(workdir / f"{kind}.db") as store:
        compactor = Compactor(store, summarizer, embedder, config)
        for n, said in enumerate(_chats(kind, rng)):
            start = T0 + timedelta(days=n)
            turns = [
                Turn.of(role, text, created_at=start + timedelta(minutes=i)) for i, (role, text) in enumerate(said)
            ]
            chat = (await store.create_chat(turns=turns)).chat
            await compactor.compact(chat.id)
        fresh = (await store.create_chat(turns=[Turn.of("user", "Let's plan the weekend.")])).chat
        shown = "\n".join(item.line for item in (await load_context(store, fresh.id, config)).sections["profile"])
        entries = [e.content for e in await store.list_profile()]
    seen = shown.casefold()
    known = [f["turn"] for f in PROBE[kind] if all(word.casefold() in seen for word in f["expect"])]
    talk = [t["text"].casefold() for chat in PROBE["small_talk"] for t in chat if t["role"] == "user"]
    return Probe(
        known=known,
        missed=[f["turn"] for f in PROBE[kind] if f["turn"] not in known],
        small_talk_entries=[e for e in entries if any(e.casefold().rstrip(".!") in t for t in talk)],
        learned_about_others=[
            o["text"] for o in PROBE["not_about_user"] if any(w.casefold() in seen for w in o["avoid"])
        ],
        shown=shown,
    )


# (kind, facts in a new chat's context when the probe was run once): the goal is 19 of 20 each. The
# facts missed are those the rules do not read: a fact whose sentence does not open on the user
# ("Home is 14 Larkspur Lane", "Coriander is the one thing I just can't eat", "There's an old piano
# in our front room"), one said in Italian, Spanish or French (the rules read English), and forms
# the reading does not know ("I've been going to a pottery class", "I'm doing a master's", "I'm
# red-green colour blind", "I do intermittent fasting", a password after "it's").
MEASURED = [("plain", 11), ("passing", 10)]


@pytest.mark.parametrize(("kind", "measured"), MEASURED)
async def test_facts_written_apart_reach_a_new_chat_and_nothing_else_does(
    kind, measured, tmp_path, summarizer, embedder, config
):
    probe = await _probe(kind, tmp_path, summarizer, embedder, config)
    assert len(probe.known) >= measured, probe.missed
    assert probe.small_talk_entries == []
    # neither what the assistant says of itself nor what the user tells of someone else
    assert probe.learned_about_others == []
