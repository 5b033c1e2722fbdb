"""Words of a text: the same whether its turns are on one line or on several (the store and the
offline embedder read each indexed window, two turns, line by line)."""

from __future__ import annotations

import pytest

from parla.memory.language.text import content_words, distinct_content_words, words

pytestmark = pytest.mark.tier("fast")

WINDOW = "User: L'azienda dell'IVA won't pay 3.5% by 12/03, Straße\nParla: D'accord, qu'il vienne: città, niño"


def test_a_line_break_separates_words_as_a_space_does():
    assert words(WINDOW) == words(WINDOW.replace("\n", " "))
    assert words(WINDOW) == [
        "user", "azienda", "iva", "won't", "pay", "3.5", "by", "12/03", "straße",
        "parla", "accord", "il", "vienne", "città", "niño",
    ]  # fmt: skip


def test_the_words_are_a_new_list_each_time():
    first = words(WINDOW)
    first.append("changed")
    assert "changed" not in words(WINDOW)
    assert content_words(WINDOW) == content_words(WINDOW)


def test_distinct_content_words_are_the_set_of_content_words():
    """The distinct words a search reads (each looked at once) are those of content_words, with
    elided articles, hyphens, numbers and line breaks."""
    for text in (
        "l'azienda dell'IVA, qu'il est là; l’amico d'Italia",
        "Don't stop the e-mail re-do at 12.5 or 3:30\nthe MEETING meeting with Ada's team",
        "a an the of to in it is",
        "",
    ):
        assert distinct_content_words(text) == set(content_words(text)), text
