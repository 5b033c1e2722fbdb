"""Reading JSON within bounds: strings past the limit cut where a character ends (whatever the
escapes, the UTF-8 and where the blocks fall), a conversation nested too deep or too long refused
and the next one read, a JSONL line too long skipped, a conversation of too many turns refused."""

from __future__ import annotations

import io
import json
import random
import re

import ijson
import pytest

from parla.memory.imports import bounded_json
from parla.memory.imports.bounded_json import CutStrings, Refused, conversations
from parla.memory.imports.bounds import ReadLimits
from parla.memory.imports.reading import Export

pytestmark = pytest.mark.tier("fast")

MARK = re.compile(r" \[([\d,]+) more bytes not read\]$")


def passed(raw: bytes, max_bytes: int, read_size: int) -> bytes:
    cut = CutStrings(io.BytesIO(raw), max_bytes)
    out, buffer = b"", bytearray(read_size)
    while n := cut.readinto(buffer):
        out += bytes(buffer[:n])
    assert cut.delivered == len(out)
    return out


@pytest.mark.parametrize("block", [7, 64, 4096])
def test_long_strings_are_cut_where_a_character_ends_and_the_rest_is_valid_json(monkeypatch, block):
    monkeypatch.setattr(bounded_json, "_BLOCK", block)
    rng = random.Random(block)
    # escapes of one and two characters, quotes and backslashes, UTF-8 of 2 to 4 bytes
    alphabet = ["a", " ", "é", "€", "😀", '"', "\\", "\n", "\u0001", "\ud7ff"]
    for _ in range(150):
        said = ["".join(rng.choice(alphabet) for _ in range(rng.choice([5, 200, 3000]))) for _ in range(3)]
        ascii_only = rng.random() < 0.5
        raw = json.dumps([{"text": s, "more": [1, {"x": s[:3]}]} for s in said], ensure_ascii=ascii_only).encode()
        limit = rng.choice([30, 700])
        read = json.loads(passed(raw, limit, rng.choice([1, 100, 1 << 16])))
        for whole, got in zip(said, read, strict=True):
            assert got["more"] == [1, {"x": whole[:3]}]
            if got["text"] == whole:
                continue
            mark = MARK.search(got["text"])
            assert mark, got["text"][-80:]
            kept = got["text"][: mark.start()]
            assert whole.startswith(kept)
            in_file = len(json.dumps(kept, ensure_ascii=ascii_only).encode()) - 2
            left_out = len(json.dumps(whole, ensure_ascii=ascii_only).encode()) - 2 - in_file
            assert int(mark.group(1).replace(",", "")) == left_out
            # cut within a character of the limit (\\ud83d\\ude00 is 12 bytes; at a block's start the cut
            # looks 6 bytes on), or a string in one block kept whole; a block of 7 bytes may hold no
            # whole character to end at, and the cut waits for the next
            assert in_file <= max(limit + 18, block) or block < 64


def test_a_string_of_a_gibibyte_is_cut_without_holding_it():
    class Huge(io.RawIOBase):
        """`{"text": "aaaa...` (1 GiB of it) `"}`, made as it is read."""

        def __init__(self) -> None:
            self.left = 1 << 30
            self.started = self.ended = False

        def readable(self) -> bool:
            return True

        def readinto(self, buffer) -> int:
            if not self.started:
                data, self.started = b'{"text": "', True
            elif self.left:
                data = b"a" * min(len(buffer), self.left)
                self.left -= len(data)
            elif not self.ended:
                data, self.ended = b'", "after": 1}', True
            else:
                return 0
            buffer[: len(data)] = data
            return len(data)

    read = CutStrings(io.BufferedReader(Huge(), 1 << 16), 6_000_000)
    ((value,),) = [list(conversations(ijson.basic_parse(read), False, ReadLimits(1_000_000, 64 << 20), read))]
    assert value["after"] == 1 and value["text"].endswith(" [1,067,741,824 more bytes not read]")
    assert 6_000_000 <= value["text"].index(" [") < 6_000_000 + (1 << 16)


def test_a_conversation_too_deep_or_too_long_is_refused_and_the_next_one_read():
    # the bytes are counted as the parser takes them, a block (64 KB) at a time
    limits = ReadLimits(1000, 100_000, max_depth=5)
    deep = "[" * 100_000 + "]" * 100_000
    long = json.dumps({"numbers": [0] * 200_000})
    raw = f'[{{"a": 1}}, {deep}, [[[["fine"]]]], {long}, "a string", {{"b": {{"c": [2]}}}}]'.encode()
    read = CutStrings(io.BytesIO(raw), 6000)
    got = list(conversations(ijson.basic_parse(read), True, limits, read))
    assert got == [
        {"a": 1},
        Refused("nested more than 5 deep"),
        [[[["fine"]]]],
        Refused("longer than import_max_conversation_mb (0.0953674 MB)"),
        "a string",
        {"b": {"c": [2]}},
    ]


def test_a_jsonl_line_too_long_is_skipped_and_the_next_read(tmp_path):
    lines = [{"turns": [{"role": "user", "text": text}]} for text in ("first", "x" * 5_000, "third")]
    source = tmp_path / "chats.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with Export(str(source), ReadLimits(1000, 2_000)) as export:
        entries = list(export.chats())
    assert [e[1].turns[0].text for e in entries if isinstance(e, tuple)] == ["first", "third"]
    (skipped,) = [e for e in entries if not isinstance(e, tuple)]
    assert str(skipped) == "line 2: longer than import_max_conversation_mb (0.00190735 MB)"


@pytest.mark.parametrize("jsonl", [True, False])
def test_a_conversation_of_too_many_turns_is_refused_and_the_next_read(tmp_path, jsonl):
    def chat(n: int) -> dict[str, object]:
        return {"turns": [{"role": ("user", "assistant")[k % 2], "text": f"turn {k}"} for k in range(n)]}

    source = tmp_path / "chats.json"
    chats = [chat(2), chat(101), chat(100)]
    source.write_text("".join(json.dumps(c) + "\n" for c in chats) if jsonl else json.dumps(chats))
    with Export(str(source), ReadLimits(1000, 1 << 20, max_turns=100)) as export:
        entries = list(export.chats())
    assert [len(e[1].turns) for e in entries if isinstance(e, tuple)] == [2, 100]
    (skipped,) = [e for e in entries if not isinstance(e, tuple)]
    what = "line" if jsonl else "conversation"
    assert str(skipped) == f"{what} 2: 101 turns, more than import_max_conversation_turns (100)"
