"""The words recall looks up: an answer's, not an echo of the question's."""

from __future__ import annotations

import pytest

from parla.memory.language.words import answer_words, query_words

pytestmark = pytest.mark.tier("fast")


@pytest.mark.parametrize(
    ("request_text", "words"),
    [
        ("what's my daughter's name", ["my", "daughter"]),
        ("When did Tom's dog run away?", ["did", "tom", "dog", "run", "away"]),
        ("quando è nato il cane di Anna?", ["nato", "il", "cane", "di", "anna"]),
        ("what", ["what"]),  # nothing else to look up: the words as said
    ],
)
def test_the_words_that_ask_and_what_a_possessive_asks_for_are_not_looked_up(request_text, words):
    assert answer_words(request_text) == words


def test_every_answer_word_is_a_query_word():
    text = "Where did Ana's friends from the choir go walking in 2021?"
    assert set(answer_words(text)) <= set(query_words(text))
