"""The offline summarizer on the 300-chat test corpus: titles read like titles, and no summary
says the same sentence twice."""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bench.corpus import chat_record
from parla.memory.imports.importer import parse_line, turns_of
from parla.memory.language.pieces import READ_AT_ONCE
from parla.memory.summarizers import transcript
from parla.memory.summarizers.extractive import ExtractiveSummarizer, offline_title

pytestmark = pytest.mark.tier("fast")

DATA = Path(__file__).parents[2] / "data"
NAMESPACE = "6f1c4a52-52a4-4c55-9a53-7c1bd0a7c0de"


def corpus(n: int = 300) -> list[list]:
    rng = random.Random(7)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    chats = []
    for i in range(n):
        record = chat_record(rng, i, rng.randint(4, 40), start + timedelta(hours=7 * i))
        chats.append(turns_of(parse_line(i, json.dumps(record)), NAMESPACE))
    return chats


def sentences(summary: str) -> list[str]:
    """The summary's sentences, compared without case and punctuation."""
    return [re.sub(r"\W+", " ", s).strip().lower() for s in summary.splitlines() if s.strip()]


async def test_no_summary_of_the_corpus_repeats_a_sentence():
    summarizer = ExtractiveSummarizer()
    for turns in corpus():
        rolling = ""
        for start in range(0, len(turns), 6):  # folded a few turns at a time, as compaction does
            rolling = await summarizer.rolling_summary(rolling, turns[start : start + 6], 400)
            repeated = [s for s, n in Counter(sentences(rolling)).items() if n > 1]
            assert not repeated, rolling
        chunk = (await summarizer.chunk_summary(turns, 200)).text
        for summary in (chunk, await summarizer.meta_summary([rolling] * 3, 300)):
            assert sentences(summary) and len(set(sentences(summary))) == len(sentences(summary)), summary


def is_title(title: str) -> bool:
    words = title.split()
    return "," not in title and 1 <= len(words) <= 7 and title[0].isupper() and words[-1].lower() not in ("and", "the")


async def test_titles_of_the_corpus_are_phrases_not_keyword_lists():
    chats = corpus()
    titles = [offline_title(transcript(turns[:6])) for turns in chats]
    assert all(is_title(t) for t in titles), [t for t in titles if not is_title(t)]
    # Each corpus chat opens "About <topic>: ...": the title names that topic in its own words.
    topics = [turns[0].text.partition(":")[0].lower().split() for turns in chats]
    named = sum(set(t.lower().split()) - {"and"} <= set(topic) for t, topic in zip(titles, topics, strict=True))
    assert named >= 290, [(t, " ".join(topic)) for t, topic in zip(titles, topics, strict=True)][:20]
    assert titles[0] == "Training for a cycling sportive"


@pytest.mark.parametrize(
    ("chat", "title"),
    [
        ("sourdough", "Sourdough starter smells"),
        ("wedding-speech", "Getting married in Florence in September"),
        ("python-deadlock", "Awaiting a lock inside a task"),
        ("tomatoes", "Yellow leaves at the bottom"),
        ("japan-trip", "Planning two weeks in Japan in April"),
    ],
)
def test_titles_of_hand_written_chats(chat, title):
    lines = (DATA / "search_chats.jsonl").read_text().splitlines()
    record = next(parse_line(i, line) for i, line in enumerate(lines) if json.loads(line)["id"] == chat)
    assert offline_title(transcript(turns_of(record, NAMESPACE)[:6])) == title


MULTILINGUAL = json.loads((DATA / "multilingual_switch.json").read_text(encoding="utf-8"))["chats"]


def _description(turns: list[str]) -> str:
    return "\n".join(("User: " if i % 2 == 0 else "Assistant: ") + text for i, text in enumerate(turns))


# Function words a title must not start or end with, whatever the stop lists say.
_FUNCTION_WORDS = """a ad al alla con da dei del della di e il in la le per che un una mio mia forse non come sono ho
    de el en la las los para por que y mi un una su es
    am an auf aus das dem den der des die ein eine für im in mit und von zu zum mein meine ist"""
FUNCTION_WORDS = set(_FUNCTION_WORDS.split())


@pytest.mark.parametrize("name", [n for n, c in MULTILINGUAL.items() if c["language"] != "en"])
def test_offline_titles_of_italian_spanish_and_german_chats_are_content_phrases(name):
    """An Italian chat about VAT was once titled "Dei, con, IVA, ATECO": function words of the
    other languages were taken for content."""
    title = offline_title(_description(MULTILINGUAL[name]["turns"]))
    words = title.lower().split()
    assert title != "New chat" and "," not in title
    assert words[0] not in FUNCTION_WORDS and words[-1] not in FUNCTION_WORDS, title


def test_italian_keywords_are_content_words():
    from parla.memory.language.text import content_words

    kept = set(content_words(_description(MULTILINGUAL["it_partita_iva"]["turns"])))
    assert {"partita", "iva", "ateco", "forfettario", "contributi", "attività"} <= kept
    assert not {"dei", "con", "per", "che", "della", "sono", "dell'inizio", "più"} & kept


def test_a_title_joins_its_two_phrases_in_the_chats_language():
    from parla.memory.language.text import language_of

    text = _description(MULTILINGUAL["it_partita_iva"]["turns"])
    assert language_of(text) == "it" and offline_title(text) == "Aprire la partita IVA"
    joined = offline_title(_description(MULTILINGUAL["it_giappone"]["turns"]) + "\nUser: Il Giappone ad aprile.")
    assert " and " not in joined
    assert language_of(_description(MULTILINGUAL["de_steuer"]["turns"])) == "de"
    assert language_of(_description(MULTILINGUAL["es_mudanza"]["turns"])) == "es"


async def test_a_sentence_without_a_full_stop_is_read_in_pieces():
    # one "sentence" of 12,000 characters was ranked, kept as a fact and read for dates whole: its
    # cost grew with its square, and a 16 MB turn of such text took minutes (issue 42, item 3)
    words = [
        "on",
        "Monday",
        "the",
        "3rd",
        "we",
        "booked",
        "the",
        "Lisbon",
        "flight",
        "and",
        "my",
        "budget",
        "is",
        "900",
        "euros",
        "so",
        "I",
        "will",
        "plan",
    ]
    run_on = " ".join(words[n % len(words)] for n in range(2_300))
    turns = turns_of(parse_line(1, json.dumps({"turns": [{"role": "user", "text": run_on}]})), NAMESPACE)
    summarizer = ExtractiveSummarizer()
    facts = await summarizer.facts(turns)
    summary = await summarizer.chunk_summary(turns, 150)
    assert facts and all(len(line) <= len("User: ") + READ_AT_ONCE for line in facts)
    assert summary.text and all(len(line) <= len("User: ") + READ_AT_ONCE for line in summary.text.splitlines())
