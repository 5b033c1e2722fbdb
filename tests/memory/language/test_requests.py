"""What a spoken request for a chat is about: its framing, its names, its date."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from parla.memory.language.requests import request_topic

pytestmark = pytest.mark.tier("fast")

NOW = datetime(2026, 11, 23, 15, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    ("request_text", "text", "words"),
    [
        # "back" frames a request anywhere ("go back to"), as before: its pain is found by "pain"
        ("take me to the chat about Tom's back pain", "Tom's back pain", ["tom", "pain"]),
        ("Can you find the one where we talked about the piano?", "piano?", ["piano"]),
        ("go back to the conversation on when Tom adopted the dog", "Tom adopted the dog", ["tom", "adopted", "dog"]),
        ("portami alla chat sul viaggio in Giappone", "viaggio in Giappone", ["viaggio", "giappone"]),
    ],
)
def test_the_words_that_lead_into_a_request_weigh_nothing(request_text: str, text: str, words: list[str]) -> None:
    topic = request_topic(request_text, NOW)
    assert topic.text == text and topic.words == words


def test_a_lead_word_inside_the_topic_is_a_topic_word():
    assert request_topic("the chat about when Tom took the bus to find a job", NOW).words == [
        "tom",
        "took",
        "bus",
        "find",
        "job",
    ]


def test_names_are_the_words_written_with_a_capital_inside_a_sentence():
    topic = request_topic("Take me to the chat about my trip to Iceland with Ann", NOW)
    assert topic.names == frozenset({"iceland", "ann"})
    assert request_topic("Die Reise nach Island", NOW).names == frozenset()  # German: every noun has one


def test_the_date_is_when_not_what():
    topic = request_topic("the chat about Ann's project in early January", NOW)
    assert topic.words == ["ann", "project"] and "january" not in topic.text.lower()
    assert topic.date is not None and topic.date.start == datetime(2026, 1, 1, tzinfo=UTC)
