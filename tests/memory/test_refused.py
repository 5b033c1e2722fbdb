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
