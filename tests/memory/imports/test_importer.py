"""Importing chats: clear errors with line numbers, the shapes people have, deterministic ids
scoped by user, and re-imports that add only what is new (on both stores)."""

from __future__ import annotations

import asyncio
import itertools
import json
import uuid
from collections import Counter
from datetime import UTC, datetime

import pytest

from parla.memory.errors import ChatNotFound, ImportLineError
from parla.memory.imports.importer import chat_id_of, decode_line, id_scope, import_chat, parse_line, turns_of
from parla.memory.language.pieces import split_text
from parla.memory.store.supabase.store import RetryPolicy
from tests.conftest import copied_store, signed_in_store

pytestmark = pytest.mark.tier("fast")


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", 'JSON object with a "turns" or "messages" list'),
        ('{"title": "x"}', "turns: Field required"),
        ('{"turns": []}', "turns: List should have at least 1 item"),
        ('{"turns": [{"role": "bot", "text": "hi"}]}', "turns.0.role"),
        ('{"turns": [{"role": "user"}]}', 'either "text" or "parts"'),
        ('{"turns": [{"role": "user", "text": "a", "parts": [{"text": "b"}]}]}', 'either "text" or "parts"'),
        ('{"turns": [{"role": "user", "text": "   "}]}', "no text"),
        ('{"turns": [{"role": "system", "text": "Be brief."}]}', "no user or assistant turn with text"),
        ('{"messages": [{"role": "narrator", "content": "x"}]}', "turns.0.role"),
        ('{"messages": [{"role": "assistant", "content": null}]}', "1 message without text skipped"),
        ('{"turns": [{"role": "user", "text": "a", "created_at": "yesterday"}]}', "turns.0.created_at"),
        # dates no store or time zone can take (issue 25, item 11): an OverflowError aborted the import
        ('{"turns": [{"role": "user", "text": "a", "created_at": "9999-12-31T23:59:59"}]}', "out of range"),
        ('{"turns": [{"role": "user", "text": "a", "created_at": "9999-12-31T20:00:00-05:00"}]}', "out of range"),
        ('{"created_at": "0001-01-01T00:00:00", "turns": [{"role": "user", "text": "a"}]}', "created_at: Value"),
        # a RecursionError aborted the import (issue 25, item 12)
        ("[" * 100_000, "nested too deeply"),
        ('{"turns": ' + "[" * 100_000, "nested too deeply"),
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


def test_untimed_turns_do_not_end_after_the_import():
    # 5,000 untimed turns were spaced a second apart from the chat's start: 83 minutes in the future
    now = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
    line = json.dumps(
        {"created_at": "2026-05-01T11:00:00", "turns": [{"role": "user", "text": f"t{i}"} for i in range(5000)]}
    )
    chat = parse_line(1, line)
    turns = turns_of(chat, chat_id_of(chat), now=now)
    assert turns[0].created_at == datetime(2026, 5, 1, 11, 0, 1, tzinfo=UTC)
    assert max(t.created_at for t in turns) == now
    assert all(a.created_at <= b.created_at for a, b in itertools.pairwise(turns))
    untimed = parse_line(1, json.dumps({"turns": [{"role": "user", "text": "a"}, {"role": "model", "text": "b"}]}))
    assert [t.created_at for t in turns_of(untimed, chat_id_of(untimed), now=now)] == [now, now]


def test_assistant_system_and_the_openai_messages_shape():
    line = json.dumps(
        {
            "title": "Sourdough",
            "messages": [
                {"role": "system", "content": "You are a helpful baker."},
                {"role": "user", "content": "My starter smells of acetone."},
                {"role": "assistant", "content": [{"type": "text", "text": "It is hungry."}, {"type": "image_url"}]},
                {"role": "assistant", "content": None, "tool_calls": [{"id": "x"}]},
                {"role": "tool", "content": "{}"},
                {"role": "user", "content": "Thanks."},
            ],
        }
    )
    chat = parse_line(3, line)
    turns = turns_of(chat, chat_id_of(chat))
    assert [(t.role, t.text) for t in turns] == [
        ("user", "My starter smells of acetone."),
        ("model", "It is hungry."),
        ("user", "Thanks."),
    ]
    assert chat.notes == [
        "1 message without text skipped (tool calls, images)",
        "1 system message skipped",
        "1 tool message skipped",
    ]
    native = parse_line(
        1, json.dumps({"turns": [{"role": "assistant", "text": "hi"}, {"role": "system", "text": "x"}]})
    )
    assert [t.role for t in turns_of(native, chat_id_of(native))] == ["model"]


def test_lines_decode_as_utf8_with_a_bom_and_say_where_they_are_not():
    assert decode_line(1, '\ufeff{"a": 1}\n'.encode()) == '{"a": 1}\n'
    with pytest.raises(ImportLineError, match=r"line 4: not UTF-8 text \(byte 0xe9 at column 11\).*iconv"):
        decode_line(4, '{"x": "caf\u00e9"}'.encode("latin-1"))


def test_a_long_turn_is_split_at_sentence_ends_and_said_so():
    sentence = "This sentence is forty characters long. "
    text = sentence * 100  # 4,000 characters
    pieces = split_text(text, 1000)
    assert len(pieces) == 4 and all(len(p) <= 1000 and p.endswith(".") for p in pieces)
    assert " ".join(pieces) == text.strip()
    chat = parse_line(1, json.dumps({"turns": [{"role": "user", "text": "hi"}, {"role": "model", "text": text}]}))
    turns = turns_of(chat, chat_id_of(chat), max_turn_tokens=250)
    assert [t.role for t in turns] == ["user"] + ["model"] * 4 and len({t.id for t in turns}) == 5
    assert chat.notes == ["turn 2 (4,000 characters) split into 4 turns"]


def test_a_huge_turn_is_split_in_linear_time():
    # a 50 MB turn took hours: each cut copied the rest of the text (issue 25, item 16)
    text = "A sentence of about fifty characters, or near it. " * 1_000_000
    pieces = split_text(text, 12_000)  # well under a second; half a minute before
    assert len(pieces) == len(text) // 12_000 + 1 and all(len(p) <= 12_000 for p in pieces)
    assert " ".join(pieces) == text.strip()


def test_a_turn_past_the_longest_kept_is_cut_at_a_sentence_and_said_so():
    text = "This sentence is forty characters long. " * 100  # 4,000 characters
    chat = parse_line(1, json.dumps({"turns": [{"role": "user", "text": "hi"}, {"role": "model", "text": text}]}))
    turns = turns_of(chat, chat_id_of(chat), max_turn_tokens=250, max_turn_chars=2_500)
    kept = " ".join(t.text for t in turns[1:])  # split after a sentence and its space
    assert kept.startswith(text[:2_479]) and kept.endswith(
        "long.\n\n[1,520 more characters not imported: import_max_turn_chars]"
    )
    assert chat.notes == [
        "turn 2 (4,000 characters) cut to its first 2,500 characters (import_max_turn_chars) and split into 3 turns"
    ]
    # a turn whose text the reading of the file cut already says how much the file held
    read_cut = json.dumps({"turns": [{"role": "user", "text": "word " * 1_000 + " [12,345 more bytes not read]"}]})
    chat = parse_line(1, read_cut)
    (turn,) = turns_of(chat, chat_id_of(chat), max_turn_chars=2_000)
    assert turn.text.endswith("word\n\n[3,000 more characters and 12,345 bytes not imported: import_max_turn_chars]")
    said = "turn 1 (5,000 characters and 12,345 more bytes in the file) cut to its first 2,000 characters"
    assert chat.notes == [f"{said} (import_max_turn_chars)"]


def _line(turns: list[tuple[str, str]], **fields) -> str:
    return json.dumps({**fields, "turns": [{"role": r, "text": t} for r, t in turns]})


async def test_a_chat_without_an_id_that_gained_turns_adds_only_those(any_store):
    opening = [("user", "Plan a trip to Japan."), ("model", "When?")]
    first = await import_chat(any_store, parse_line(1, _line(opening)))
    assert (first.outcome, first.turns_added) == ("imported", 2)
    longer = opening + [("user", "In April."), ("model", "Book early.")]
    again = await import_chat(any_store, parse_line(1, _line(longer)))
    assert (again.outcome, again.chat_id, again.turns_added) == ("added", first.chat_id, 2)
    same = await import_chat(any_store, parse_line(1, _line(longer)))
    assert (same.outcome, same.turns_added) == ("unchanged", 0)
    assert len(await any_store.list_chats()) == 1
    assert [t.text for t in await any_store.load_turns(first.chat_id)] == [t for _, t in longer]


async def test_an_edited_chat_differs_until_replaced(any_store):
    await import_chat(any_store, parse_line(1, _line([("user", "a"), ("model", "b"), ("user", "c")], id="x")))
    edited = _line([("user", "a"), ("model", "B!"), ("user", "c")], id="x")
    differs = await import_chat(any_store, parse_line(1, edited))
    assert differs.outcome == "differs" and differs.detail == "turn 2 differs from the stored chat's"
    assert [t.text for t in await any_store.load_turns(differs.chat_id)] == ["a", "b", "c"]
    replaced = await import_chat(any_store, parse_line(1, edited), replace=True)
    assert (replaced.outcome, replaced.chat_id, replaced.turns_added) == ("replaced", differs.chat_id, 3)
    assert [t.text for t in await any_store.load_turns(differs.chat_id)] == ["a", "B!", "c"]
    # turns said in Parla since the import are never replaced away
    from parla.records.turn import Turn

    await any_store.append_turns(differs.chat_id, [Turn.of("user", "said later")])
    kept = await import_chat(any_store, parse_line(1, _line([("user", "A")], id="x")), replace=True)
    assert kept.outcome == "differs" and "1 turns said in Parla" in kept.detail
    assert len(await any_store.load_turns(differs.chat_id)) == 4


async def test_an_id_from_an_older_import_keeps_naming_its_chat(any_store):
    """Chats imported before ids were scoped by user are found again, not duplicated."""
    chat = parse_line(1, _line([("user", "a"), ("model", "b")], id="legacy"))
    legacy = str(uuid.uuid5(uuid.UUID("6f1c4a52-52a4-4c55-9a53-7c1bd0a7c0de"), "id:legacy"))
    await any_store.create_chat(chat_id=legacy, turns=turns_of(chat, legacy))
    again = await import_chat(any_store, chat, scope=await id_scope(any_store))
    assert (again.outcome, again.chat_id) == ("unchanged", legacy)


@pytest.mark.tier("postgres")
async def test_two_users_import_the_same_file_on_supabase(supabase, tmp_path):
    a = await signed_in_store(supabase, tmp_path, "a@example.com")
    b = await signed_in_store(supabase, tmp_path, "b@example.org")
    lines = [
        _line([("user", "Japan in April?"), ("model", "Yes.")], id="trip"),
        _line([("user", "hi"), ("model", "hello")]),
    ]
    async with a, b:
        mine = [await import_chat(a, parse_line(n, line), scope=await id_scope(a)) for n, line in enumerate(lines)]
        theirs = [await import_chat(b, parse_line(n, line), scope=await id_scope(b)) for n, line in enumerate(lines)]
        assert [r.outcome for r in mine + theirs] == ["imported"] * 4
        assert not {r.chat_id for r in mine} & {r.chat_id for r in theirs}
        for r in mine:  # B learns nothing of A's chats and cannot reach them
            with pytest.raises(ChatNotFound):
                await b.get_chat(r.chat_id)
        assert len(await a.list_chats()) == len(await b.list_chats()) == 2


async def test_two_imports_of_one_file_at_once_count_each_chat_once(any_store):
    # two simultaneous imports of 200 chats reported 146 + 62 = 208 imported (issue 25, item 17)
    chats = [parse_line(n, _line([("user", f"question {n}"), ("model", f"answer {n}")])) for n in range(1, 21)]
    results = await asyncio.gather(*(import_chat(any_store, c) for c in [*chats, *chats]))
    outcomes = Counter(r.outcome for r in results)
    assert outcomes == {"imported": 20, "unchanged": 20}, outcomes
    assert sum(r.turns_added for r in results) == 40 and len(await any_store.list_chats()) == 20


@pytest.mark.tier("postgres")
@pytest.mark.parametrize("copied", [False, True], ids=["supabase", "supabase-copy"])
async def test_a_chat_whose_answer_was_lost_is_still_counted_imported(supabase, tmp_path, copied):
    # The import above once counted 19 imported / 21 unchanged under load: a create_chat stored its
    # turns, its answer was lost (a timeout), and the retry found them stored and reported 0 added.
    chat = parse_line(1, _line([("user", "Japan in April?"), ("model", "Book early.")]))
    supabase.shim.faults.next("/rest/v1/rpc/create_chat", "drop_after")
    if copied:
        async with copied_store(supabase, tmp_path) as store:
            store.remote.retry = RetryPolicy(attempts=2, delay=0.01, max_delay=0.05)
            result = await import_chat(store, chat)
    else:
        async with await signed_in_store(supabase, tmp_path) as store:
            store.retry = RetryPolicy(attempts=2, delay=0.01, max_delay=0.05)
            result = await import_chat(store, chat)
    assert supabase.shim.faults.injected["drop_after"] == 1
    assert (result.outcome, result.turns_added) == ("imported", 2)
