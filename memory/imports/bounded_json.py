"""Reading a JSON array of conversations (or one conversation) as a stream, within bounds, so that
a file made to hurt costs seconds and a few megabytes rather than the machine:

- `CutStrings` passes the file's bytes to the parser with every string longer than a limit cut
  short (the rest skipped, a note of how much in its place): the parser holds a whole string in
  memory before it hands it on, and a 1 MB zip can hold a 1 GiB string.
- `conversations` builds each conversation from the parser's events (ijson's `basic_parse`,
  which keeps no path), and refuses one nested deeper than a limit or longer than a limit, then
  reads on to the next. ijson's own item builder keeps the path to the value it builds at every
  level, which grows with the square of the depth: 100,000 nested brackets (200 KB) took 24 GB.

Both look at the bytes as they come, a block at a time, and neither keeps more than the
conversation being built."""

from __future__ import annotations

import io
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

from .bounds import ReadLimits, read_cut_mark

# Each escape (a backslash and the byte after it) becomes two bytes that are neither a quote nor a
# backslash, the first of them 0xFE, a byte UTF-8 never uses: the same length, so a position in
# the copy is one in the block, and its quotes are the strings' own.
_ESCAPE = re.compile(rb"\\.", re.DOTALL)
_NEUTRAL = b"\xfe\xff"
_BLOCK = 1 << 16
_U = ord("u")
# The escape of the first half of a surrogate pair (an emoji, written with ensure_ascii)
_HIGH_SURROGATE = re.compile(rb"\\u[dD][89abAB][0-9a-fA-F]{2}")


class CutStrings(io.RawIOBase):
    """The bytes of `stream`, a JSON text, with each string longer than `max_bytes` cut: its first
    `max_bytes` or a few more, up to a whole character, then `read_cut_mark` of what was left out.
    `delivered` counts the bytes handed on."""

    def __init__(self, stream: IO[bytes], max_bytes: int) -> None:
        self._stream = stream
        self._max = max_bytes
        self._in_string = False
        self._length = 0  # bytes of the string being read, so far
        self._escaped = False  # the last block ended with the backslash of an escape
        self._skipped: int | None = None  # while a string is cut: the bytes left out so far
        self._out = b""
        self._at = 0
        self.delivered = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while self._at >= len(self._out):
            block = self._stream.read(_BLOCK)
            if not block:
                return 0
            self._out, self._at = self._pass(block), 0
        n = min(len(buffer), len(self._out) - self._at)
        buffer[:n] = self._out[self._at : self._at + n]
        self._at += n
        self.delivered += n
        return n

    def _neutral(self, block: bytes) -> bytes:
        """`block` with its escapes made neutral (see _ESCAPE), one carried from the block before
        included."""
        if self._escaped:
            copy = _NEUTRAL[1:] + _ESCAPE.sub(_NEUTRAL, block[1:])
        else:
            copy = _ESCAPE.sub(_NEUTRAL, block)
        # a backslash left alone can only be the block's last byte: its escape goes on in the next
        self._escaped = copy.endswith(b"\\")
        return copy

    def _pass(self, block: bytes) -> bytes:
        """What is handed on of `block`."""
        copy = self._neutral(block)
        start, out = 0, b""
        if self._skipped is not None:  # a string being cut: left out up to its closing quote
            close = copy.find(b'"')
            if close < 0:
                self._skipped += len(block)
                return b""
            self._skipped += close
            out, start = read_cut_mark(self._skipped).encode(), close
            self._skipped = None
        quotes = copy.count(b'"', start)
        if quotes:
            last = copy.rfind(b'"')
            self._in_string ^= quotes % 2 == 1
            self._length = len(block) - last - 1
        elif self._in_string:
            self._length += len(block) - start
        if not self._in_string or self._length <= self._max:
            return out + block[start:]
        # the string has passed the limit in this block: cut it where a character ends
        opened = len(block) - self._length  # where it starts in this block, or before it (< 0)
        cut = _character_end(block, copy, max(start, opened, 0), len(block) - (self._length - self._max))
        if cut is None:
            return out + block[start:]  # no whole character to end at yet: the next block
        self._skipped = len(block) - cut
        return out + block[start:cut]


def _character_end(block: bytes, copy: bytes, low: int, want: int) -> int | None:
    """A position of `block`, at `want` or the nearest after it (or before, down to `low`), that
    ends a whole character of a string: not inside an escape, a pair of escapes of one character
    or a UTF-8 sequence. `low` starts the string's bytes in this block; a position looks back at
    most 6 bytes, within the block."""
    candidates: list[int] = [*range(want, len(block)), *range(want - 1, low - 1, -1)]
    for at in candidates:
        if at == low and at > 0:
            return at  # right after the opening quote
        if at < low + 6:
            continue  # what came before is in the block before, or the string's start is near
        if 0x80 <= block[at] < 0xC0 or copy[at - 1] == _NEUTRAL[0]:
            continue  # inside a UTF-8 sequence, or between a backslash and what it escapes
        if any(copy[j] == _NEUTRAL[0] and block[j + 1] == _U for j in range(at - 5, at - 1)):
            continue  # inside \uXXXX
        if copy[at - 6] == _NEUTRAL[0] and _HIGH_SURROGATE.fullmatch(block, at - 6, at):
            continue  # between the two halves of a surrogate pair
        return at
    return None


@dataclass(frozen=True)
class Refused:
    """A conversation left unread, and why (for the import's report)."""

    reason: str


def conversations(
    events: Iterator[tuple[str, Any]], in_array: bool, limits: ReadLimits, read: CutStrings
) -> Iterator[Any]:
    """Each value of the array the events are of (`in_array`), or the one value, built, or
    `Refused` when it nests deeper than `limits.max_depth` or passes `limits.max_conversation_bytes`
    of `read`; after a refused one, the next."""
    if in_array:
        next(events)  # the array's start: the reader told it from the file's first byte
    levels: list[Any] = []  # the containers open in the value being built, outermost first
    key: Any = None
    started = 0
    for event, value in events:
        if event == "map_key":
            # the same few keys in every message: one string each, not one per message (a
            # conversation of many short messages is held in about half the memory)
            key = sys.intern(value)
            continue
        if event in ("start_map", "start_array"):
            if not levels:
                started = read.delivered
            elif len(levels) >= limits.max_depth:
                yield _refused(events, len(levels) + 1, f"nested more than {limits.max_depth} deep")
                levels = []
                continue
            container: Any = {} if event == "start_map" else []
            if levels:
                _add(levels[-1], key, container)
            levels.append(container)
        elif event in ("end_map", "end_array"):
            if not levels:
                return  # the end of the array
            done = levels.pop()
            if not levels:
                yield done
                continue
        elif levels:
            _add(levels[-1], key, value)
        else:
            yield value
            continue
        if read.delivered - started > limits.max_conversation_bytes:
            yield _refused(events, len(levels), limits.too_long)
            levels = []


def _add(container: Any, key: Any, value: Any) -> None:
    if type(container) is list:
        container.append(value)
    else:
        container[key] = value


def _refused(events: Iterator[tuple[str, Any]], depth: int, why: str) -> Refused:
    """`Refused` for the value being built, its events read up to its end (`depth` levels open)."""
    while depth:
        event, _ = next(events)
        if event in ("start_map", "start_array"):
            depth += 1
        elif event in ("end_map", "end_array"):
            depth -= 1
    return Refused(why)
