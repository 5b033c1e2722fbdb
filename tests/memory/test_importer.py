"""JSONL import parsing: clear errors with line numbers, deterministic ids."""

from __future__ import annotations

import json
import uuid

import pytest

from memory.importer import ImportLineError, chat_id_of, parse_line, turns_of


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", 'JSON object with a "turns" list'),
        ('{"title": "x"}', "turns: Field required"),
        ('{"turns": []}', "turns: List should have at least 1 item"),
        ('{"turns": [{"role": "bot", "text": "hi"}]}', "turns.0.role"),
        ('{"turns": [{"role": "user"}]}', 'either "text" or "parts"'),
        ('{"turns": [{"role": "user", "text": "a", "parts": [{"text": "b"}]}]}', 'either "text" or "parts"'),
        ('{"turns": [{"role": "user", "text": "   "}]}', "no text"),
        ('{"turns": [{"role": "user", "text": "a", "created_at": "yesterday"}]}', "turns.0.created_at"),
    ],
)
def test_bad_lines_say_which_line_and_why(line, reason):
    with pytest.raises(ImportLineError) as caught:
        parse_line(7, line)
    assert str(caught.value).startswith("line 7: ") and reason in str(caught.value)


def test_ids_are_deterministic_and_uuid():
    line = json.dumps({"turns": [{"role": "user", "text": "hi"}, {"role": "model", "parts": [{"text": "hello"}]}]})
    a, b = parse_line(1, line), parse_line(2, line)
    assert chat_id_of(a) == chat_id_of(b) and uuid.UUID(chat_id_of(a))
    assert [t.id for t in turns_of(a, chat_id_of(a))] == [t.id for t in turns_of(b, chat_id_of(b))]
    named = parse_line(1, json.dumps({"id": "my-chat", "turns": [{"role": "user", "text": "x"}]}))
    assert chat_id_of(named) == chat_id_of(
        parse_line(1, json.dumps({"id": "my-chat", "turns": [{"role": "user", "text": "y"}]}))
    )
    given = str(uuid.uuid4())
    assert chat_id_of(parse_line(1, json.dumps({"id": given, "turns": [{"role": "user", "text": "x"}]}))) == given


def test_timestamps_fill_in_and_keep_order():
    line = json.dumps(
        {
            "created_at": "2025-03-01T10:00:00",
            "turns": [
                {"role": "user", "text": "a"},
                {"role": "model", "text": "b", "created_at": "2025-03-01T12:00:00+02:00"},
                {"role": "user", "text": "c"},
            ],
        }
    )
    chat = parse_line(1, line)
    turns = turns_of(chat, chat_id_of(chat))
    assert [t.created_at.isoformat() for t in turns] == [
        "2025-03-01T10:00:01+00:00",
        "2025-03-01T12:00:00+02:00",
        "2025-03-01T12:00:01+02:00",
    ]
    assert all(t.source == "import" for t in turns)
