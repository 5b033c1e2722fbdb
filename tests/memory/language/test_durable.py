"""The general reading of durable first-person statements (memory.language.durable), beside the worded rules."""

from __future__ import annotations

import pytest

from parla.memory.language.importance import durable_statements

pytestmark = pytest.mark.tier("fast")


# Said as people say them; none of the worded rules of memory.language.importance names them.
DURABLE = [
    "I drive a green Skoda Octavia.",
    "Our dog's name is Pepper, she's a border collie.",
    "We're flying to Lisbon on the 3rd of June.",
    "I go swimming every morning at six.",
    "My husband Marco works night shifts at the hospital.",
    "Oh by the way, the code for the cabin wifi is bluefinch77.",
    "I can't drink milk, I'm lactose intolerant.",
]
PASSING = [
    "I'm so tired today, the meeting ran long.",
    "The report is due on Friday for my colleague, not me.",
    "Do you think I should drive to Lisbon?",
    "I think the movie was too long.",
    "If I had a dog I would call him Pepper.",
    "Thanks, that helps a lot.",
]


@pytest.mark.parametrize("sentence", DURABLE)
def test_a_durable_statement_no_rule_names_is_found(sentence):
    assert [s.category for s in durable_statements(sentence)] in (["personal"], ["code"], ["health"])


@pytest.mark.parametrize("sentence", PASSING)
def test_the_moment_an_opinion_a_question_or_someone_elses_fact_is_not(sentence):
    assert durable_statements(sentence) == []


def test_a_sum_of_money_is_the_moment_not_the_user():
    assert durable_statements("I have 689 euros and time until March 12.") == []
    assert [s.category for s in durable_statements("I have two daughters and a cat.")] == ["family"]
