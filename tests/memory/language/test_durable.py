"""The general reading of durable first-person statements (memory.language.durable), beside the
worded rules, clause by clause (memory.language.text's split)."""

from __future__ import annotations

import pytest

from parla.memory.language.importance import durable_statements
from parla.memory.language.text import clauses, sentences

pytestmark = pytest.mark.tier("fast")

pytestmark = pytest.mark.tier("fast")


# Said as people say them; none of the worded rules of memory.language.importance names them.
DURABLE = [
    "I drive a green Skoda Octavia.",
    "Our dog's name is Pepper, she's a border collie.",
    "We're flying to Lisbon on the 3rd of June.",
    "I go swimming every morning at six.",
    "My husband Marco works night shifts at the hospital.",
    "Oh by the way, the code for the cabin wifi is bluefinch77.",
    "I'm a plumber.",
    "I grew up in Manhattan.",
    "I've never been out of Ohio.",
    "I volunteer at a soup kitchen on Sundays.",
    "My favourite band is The Who.",
    "I'm not very good at chess.",
]
PASSING = [
    "I'm so tired today, the meeting ran long.",
    "The report is due on Friday for my colleague, not me.",
    "Do you think I should drive to Lisbon?",
    "I think the movie was too long.",
    "If I had a dog I would call him Pepper.",
    "Thanks, that helps a lot.",
    "I'm glad you liked it.",
    "I'm sure you'll do great.",
    "I love that book!",
    "I'm not very good at it.",
    "I hope so.",
    "I love the characters and the story.",
    "We have a lot in common!",
    "I had a great time.",
    "I'm going to make tea now.",
    "I have not.",
]
# Agreeing with what the other speaker said of themselves: theirs, not the user's.
ECHOES = ["I love dogs too!", "Me too, I'm a nurse as well.", "I'm not a good swimmer either."]


@pytest.mark.parametrize("sentence", DURABLE)
def test_a_durable_statement_no_rule_names_is_found(sentence):
    found = durable_statements(sentence)
    assert found and {s.category for s in found} <= {"personal", "code", "health", "family", "preference"}


@pytest.mark.parametrize("sentence", PASSING)
def test_the_moment_an_opinion_a_question_or_someone_elses_fact_is_not(sentence):
    assert durable_statements(sentence) == []


@pytest.mark.parametrize("sentence", ECHOES)
def test_agreeing_with_the_other_speaker_is_not_a_fact_of_the_user(sentence):
    assert durable_statements(sentence) == []


def test_a_sum_of_money_is_the_moment_not_the_user():
    assert durable_statements("I have 689 euros and time until March 12.") == []
    assert [s.category for s in durable_statements("I have two daughters and a cat.")] == ["family"]


def test_a_fact_said_in_passing_is_read_apart_from_the_question_around_it():
    said = {
        "I'm seeing a new physio, I can't take ibuprofen, should I tell her?": "I can't take ibuprofen",
        "My cat is fourteen, is dry food still fine for her?": "My cat is fourteen",
        "I'm registering with a new GP. I'm allergic to penicillin, what should I tell them?": (
            "I'm allergic to penicillin"
        ),
    }
    for text, fact in said.items():
        found = [s.text for s in durable_statements(text)]
        assert fact in found, (text, found)
        assert not any("?" in s or "tell" in s for s in found)


def test_each_fact_is_its_own_statement():
    found = [s.text for s in durable_statements("I can't drink milk, I'm lactose intolerant.")]
    assert found == ["I can't drink milk", "I'm lactose intolerant."]
    found = [s.text for s in durable_statements("I'm a nursing student and I work at a bar at night.")]
    assert found == ["I'm a nursing student", "I work at a bar at night."]


def test_a_sentence_said_without_a_full_stop_ends_where_the_next_one_starts():
    # transcribed speech: the code, then a request, with nothing between
    (code,) = durable_statements("the code for the side door is 5150 Tell me something about Jupiter")
    assert code.text == "The code for the side door is 5150"
    assert sentences("I love The Who and my dog") == ["I love The Who and my dog"]  # a name goes on
    assert sentences("My favourite book is by F. Scott Fitzgerald. I saw Dr. Patel.") == [
        "My favourite book is by F. Scott Fitzgerald.",
        "I saw Dr. Patel.",
    ]
    assert clauses("I'm seeing a new physio, I can't take ibuprofen, should I tell her?") == [
        "I'm seeing a new physio",
        "I can't take ibuprofen",
        "should I tell her?",
    ]
