"""The one repair of text no store can hold (parla.records.turn.storable_text) and where it applies."""

from __future__ import annotations

import logging

import pytest

from parla.memory.imports.importer import chat_id_of, parse_line
from parla.records.pins import Pin
from parla.records.turn import Part, Turn, storable_text

pytestmark = pytest.mark.tier("fast")

EVERYTHING_ELSE = "Ça va? 日本語 👩🏽‍💻 e\u0301 \ufffd \u200b\t\n\r\x01\x7f\U0010fffd"


def test_only_nul_and_lone_surrogates_change(caplog):
    assert storable_text(EVERYTHING_ELSE, "x") is EVERYTHING_ELSE
    assert caplog.records == []
    with caplog.at_level(logging.WARNING, logger="parla.memory"):
        repaired = storable_text("a\x00b\ud800c\udfffd\ud83d\ude00e\ud83d", "turn 7")
    assert repaired == "a\ufffdb\ufffdc\ufffdd😀e\ufffd"  # a surrogate pair is the character it encodes
    (record,) = caplog.records
    assert record.getMessage().startswith("turn 7 had code points no store can hold") and "(4 replaced)" in (
        record.getMessage()
    )


def test_every_writer_gets_storable_text():
    assert Turn.of("user", "a\x00").text == "a\ufffd"
    assert Turn(role="model", parts=[Part(text="\ud800")], thinking="\x00").wire_shape() == {
        "role": "model",
        "parts": [{"text": "\ufffd"}],
        "thinking": "\ufffd",
    }
    assert Pin(chat_id="c", content="tea\x00").content == "tea\ufffd"
    chat = parse_line(1, '{"title": "t\\ud800", "turns": [{"role": "user", "text": "hi \\udc00"}]}')
    assert chat.turns[0].text == "hi \ufffd"
    assert chat_id_of(chat) == chat_id_of(parse_line(1, '{"turns": [{"role": "user", "text": "hi \\ufffd"}]}'))
