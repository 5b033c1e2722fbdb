"""The local record of turns the store refused for good: exact text, private file, durable lines."""

from __future__ import annotations

import stat

import pytest

from parla.memory.store.refused import RefusedTurns
from parla.records.turn import Turn

pytestmark = pytest.mark.tier("fast")


async def test_kept_turns_come_back_exactly_from_a_private_file(tmp_path):
    kept = RefusedTurns(RefusedTurns.beside(tmp_path / "data" / "parla.db"))
    assert kept.path == tmp_path / "data" / "parla.refused.jsonl"
    assert kept.count() == 0 and kept.read() == []
    odd = [Turn.of("user", "a 😀 b\u200b"), Turn.of("model", "ünïcode e\u0301 עברית \ufffd", interrupted=True)]
    await kept.keep("chat-1", odd, "UnicodeEncodeError: surrogates not allowed")
    await kept.keep("chat-2", [Turn.of("user", "later")], "ChatNotFound: no chat matches 'chat-2'")
    back = kept.read()
    assert [b.turn for b in back[:2]] == odd  # every field, the text exactly as said
    assert [(b.chat_id, b.turn.text, b.reason.split(":")[0]) for b in back] == [
        ("chat-1", "a 😀 b\u200b", "UnicodeEncodeError"),
        ("chat-1", "ünïcode e\u0301 עברית \ufffd", "UnicodeEncodeError"),
        ("chat-2", "later", "ChatNotFound"),
    ]
    assert kept.count() == 3
    assert stat.S_IMODE(kept.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(kept.path.parent.stat().st_mode) == 0o700


async def test_a_replay_stores_what_the_store_takes_once_and_keeps_the_rest(store, tmp_path):
    kept = RefusedTurns(tmp_path / "kept.jsonl")
    chat = (await store.create_chat(title="Lisbon")).chat
    turns = [Turn.of("user", "the tram"), Turn.of("model", "number 28")]
    await store.append_turns(chat.id, turns[:1])  # stored meanwhile: the replay adds it no second time
    await kept.keep(chat.id, turns, "answered, not stored yet")
    await kept.keep(chat.id, turns, "not stored before the session closed")  # the same turns, kept again
    await kept.keep("gone", [Turn.of("user", "lost chat")], "ChatNotFound")
    replayed = await kept.replay(store.append_turns)
    assert (replayed.stored, replayed.left) == (2, 1)
    assert [t.text for t in (await store.load_history(chat.id)).full_history] == ["the tram", "number 28"]
    assert [(k.chat_id, k.turn.text, k.reason) for k in kept.read()] == [("gone", "lost chat", "ChatNotFound")]
    await store.delete_chat(chat.id)
    again = await kept.replay(store.append_turns)
    assert (again.stored, again.left) == (0, 1)  # refused again: still kept


async def test_held_turns_are_forgotten_by_id_and_the_file_goes_with_the_last(tmp_path):
    refused = RefusedTurns.beside(tmp_path / "parla.db")
    held = RefusedTurns(RefusedTurns.held_beside(refused))
    assert held.path == tmp_path / "parla.held.jsonl"
    first = [Turn.of("user", "tell me a story"), Turn.of("model", "once upon a time")]
    second = [Turn.of("user", "and then?"), Turn.of("model", "they lived on")]
    await held.keep("chat-1", first, "held")
    await held.keep("chat-2", second, "held")
    await held.forget({first[0].id, first[1].id, "never-held"})
    assert [(k.chat_id, k.turn) for k in held.read()] == [("chat-2", second[0]), ("chat-2", second[1])]
    await held.forget({"never-held"})  # nothing of it: the file stays as it was
    assert held.count() == 2
    await held.forget({t.id for t in second})
    assert not held.path.exists() and held.read() == []
    await held.forget({"never-held"})  # no file: nothing to do


async def test_held_turns_left_by_a_killed_run_are_replayed_once(store, tmp_path):
    held = RefusedTurns(tmp_path / "parla.held.jsonl")
    chat = (await store.create_chat(title="Stories")).chat
    stored = [Turn.of("user", "a story"), Turn.of("model", "once upon a time, the end")]
    await store.append_turns(chat.id, stored)  # its final version was stored, then the process died
    left = [Turn.of("user", "another"), Turn.of("model", "there was a river")]
    await held.keep(chat.id, stored + left, "held")
    replayed = await held.replay(store.append_turns)
    assert (replayed.stored, replayed.left) == (4, 0)
    history = (await store.load_history(chat.id)).full_history
    assert [t.id for t in history] == [t.id for t in stored + left]  # each once
    assert not held.path.exists()


async def test_a_torn_last_line_is_skipped_with_a_log_and_gone_after_the_replay(store, tmp_path, caplog):
    held = RefusedTurns(tmp_path / "parla.held.jsonl")
    chat = (await store.create_chat(title="Torn")).chat
    whole = Turn.of("model", "said in full")
    await held.keep(chat.id, [whole], "held")
    await held.keep(chat.id, [Turn.of("model", "torn by the kill")], "held")
    data = held.path.read_bytes()
    held.path.write_bytes(data[: len(data) - 40])  # the process died in the middle of the second write
    assert [k.turn for k in held.read()] == [whole]
    assert any(r.levelname == "WARNING" and "torn line" in r.getMessage() for r in caplog.records)
    replayed = await held.replay(store.append_turns)
    assert (replayed.stored, replayed.left) == (1, 0)
    assert [t.id for t in (await store.load_history(chat.id)).full_history] == [whole.id]
    assert not held.path.exists()


async def test_a_damaged_line_before_the_last_is_an_error(tmp_path):
    held = RefusedTurns(tmp_path / "parla.held.jsonl")
    await held.keep("chat-1", [Turn.of("model", "first")], "held")
    held.path.write_bytes(b'{"chat_id": "chat-1", "tur\n' + held.path.read_bytes())
    with pytest.raises(ValueError, match="line 1"):
        held.read()
