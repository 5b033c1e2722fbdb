"""The local record of turns the store refused for good: exact text, private file, durable lines."""

from __future__ import annotations

import stat

from parla.memory.refused import RefusedTurns
from parla.memory.turn import Turn


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
