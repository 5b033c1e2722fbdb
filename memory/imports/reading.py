"""Opening what `parla import` is given and reading chats from it one at a time, whatever its size:
a JSONL file (one chat per line), a JSON array of conversations (ChatGPT's, Claude's or Open WebUI's
export, or chats in our shape), one JSON object, or a .zip export holding `conversations.json`.
The format is told by the content, not the file's name, and each conversation by its own keys, so
a file mixing them still reads. Arrays are parsed incrementally (ijson, within the bounds of
`bounded_json`) and JSONL a line at a time, so memory stays bounded by one conversation, not the
file, and a conversation past the `ReadLimits` is refused, not read."""

from __future__ import annotations

import io
import json
import sys
import zipfile
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from types import ModuleType
from typing import IO, Any, Self

import ijson

from ..config import MemoryConfig
from ..errors import ImportFormatError, ImportLineError
from . import chatgpt, claude, openwebui
from .bounded_json import CutStrings, Refused, conversations
from .bounds import ReadLimits
from .importer import ImportChat, chat_of, decode_line, json_line

_FORMATS: tuple[ModuleType, ...] = (chatgpt, claude, openwebui)
_BUFFER = 1 << 16
_BOM = b"\xef\xbb\xbf"


class _Counted(io.RawIOBase):
    """A binary stream that counts the bytes read through it (the progress of the import)."""

    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream
        self.count = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self._stream.read(len(buffer))
        buffer[: len(data)] = data
        self.count += len(data)
        return len(data)


def _zip_member(archive: zipfile.ZipFile, name: str) -> zipfile.ZipInfo:
    """The conversations in an export's archive: `conversations.json`, else its only JSON file."""
    files = [i for i in archive.infolist() if not i.is_dir()]
    named = sorted(
        (i for i in files if i.filename.rsplit("/", 1)[-1] == "conversations.json"), key=lambda i: len(i.filename)
    )
    json_files = [i for i in files if i.filename.endswith((".json", ".jsonl"))]
    if named:
        return named[0]
    if len(json_files) == 1:
        return json_files[0]
    raise ImportFormatError(f"{name} is a .zip without conversations.json: unpack it and import the chats' JSON file")


def converted(number: int, data: Any, what: str, limits: ReadLimits) -> tuple[ImportChat, str]:
    """One conversation of any format as an ImportChat, and the name of its format; refused
    (ImportLineError) when it holds more turns than `limits` lets it, before they are checked and
    stored, which takes memory with their number."""
    if isinstance(data, dict):
        for fmt in _FORMATS:
            if fmt.matches(data):
                try:
                    shaped, notes = fmt.to_import_shape(data)
                except (AttributeError, TypeError, KeyError) as e:  # a field of another type than the format's
                    raise ImportLineError(
                        number, f"not in the shape of a {fmt.NAME} ({type(e).__name__}: {e})", what
                    ) from None
                if not shaped["turns"]:
                    left_out = f" ({'; '.join(notes)})" if notes else ""
                    raise ImportLineError(number, f"an empty conversation: no message with text{left_out}", what)
                _count(number, shaped, what, limits)
                return chat_of(number, shaped, what, notes), fmt.NAME
        _count(number, data, what, limits)
    return chat_of(number, data, what), "OpenAI messages" if isinstance(
        data, dict
    ) and "turns" not in data else "Parla's shape"


def _count(number: int, data: dict[str, Any], what: str, limits: ReadLimits) -> None:
    """ImportLineError when the conversation's "turns" (or "messages") are more than `limits` lets
    one hold."""
    turns = data.get("turns", data.get("messages"))
    why = limits.too_many(len(turns)) if isinstance(turns, list) else None
    if why:
        raise ImportLineError(number, why, what)


class Export:
    """A source being read: `chats()` yields each conversation with its number (or why it was
    skipped) as it is parsed, within `limits` (the settings' by default); `formats` counts what was
    read by format, `what` says whether a number is a line's or a conversation's, `read` and `size`
    are bytes for progress."""

    def __init__(self, source: str, limits: ReadLimits | None = None) -> None:
        self.source = source
        self.limits = limits or ReadLimits.of(MemoryConfig.model_validate({}))
        self.formats: Counter[str] = Counter()
        self.what = "line"
        self.size: int | None = None
        self.where = "stdin" if source == "-" else source
        self._stack = ExitStack()
        try:
            self._stream = self._open()
        except OSError as e:  # unreadable, a folder, a disk error: the user's to fix
            self._stack.close()
            raise ImportFormatError(f"cannot read {self.where}: {e}") from e
        except zipfile.BadZipFile as e:
            self._stack.close()
            raise ImportFormatError(f"{self.where} is not a readable .zip ({e})") from e

    def _open(self) -> io.BufferedReader:
        raw: IO[bytes]
        if self.source == "-":
            raw = sys.stdin.buffer
        else:
            path = Path(self.source)
            self.size = path.stat().st_size
            raw = self._stack.enter_context(path.open("rb"))
            if raw.read(4) == b"PK\x03\x04":
                archive = self._stack.enter_context(zipfile.ZipFile(raw))
                member = _zip_member(archive, self.source)
                self.where, self.size = f"{member.filename} in {self.source}", member.file_size
                raw = self._stack.enter_context(archive.open(member))
            else:
                raw.seek(0)
        self._counted = _Counted(raw)
        return io.BufferedReader(self._counted, _BUFFER)

    @property
    def format_name(self) -> str:
        names = ", ".join(self.formats) or "JSON"
        return f"{names} (JSONL)" if self.what == "line" else names

    @property
    def read(self) -> int:
        return self._counted.count

    def close(self) -> None:
        self._stack.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def chats(self) -> Iterator[tuple[int, ImportChat] | ImportLineError]:
        start = self._stream.peek(_BUFFER)[:_BUFFER]
        if start.startswith(_BOM):
            self._stream.read(len(_BOM))
            start = start[len(_BOM) :]
        first = start.lstrip()[:1]
        if first == b"[" or (first == b"{" and not _first_line_is_json(start)):
            self.what = "conversation"
            # an array of conversations, or one pretty-printed object: a single conversation
            yield from self._parsed(in_array=first == b"[")
        elif first:
            yield from self._lines()

    def _convert(self, number: int, data: Any) -> tuple[int, ImportChat] | ImportLineError:
        try:
            chat, fmt = converted(number, data, self.what, self.limits)
        except ImportLineError as e:
            return e
        self.formats[fmt] += 1
        return number, chat

    def _parsed(self, in_array: bool) -> Iterator[tuple[int, ImportChat] | ImportLineError]:
        number = 0
        read = CutStrings(self._stream, self.limits.max_string_bytes)
        events = ijson.basic_parse(read, use_float=True)
        try:
            for number, data in enumerate(conversations(events, in_array, self.limits, read), start=1):
                if isinstance(data, Refused):
                    yield ImportLineError(number, f"{data.reason} (near byte {self.read:,} of {self.where})", self.what)
                else:
                    yield self._convert(number, data)
        except ijson.JSONError as e:
            yield ImportLineError(
                number + 1,
                f"not valid JSON near byte {self.read:,} of {self.where} ({e}); the rest of the file was not read",
                "conversation",
            )

    def _lines(self) -> Iterator[tuple[int, ImportChat] | ImportLineError]:
        line_no = 0
        while (line := self._line()) is not None:
            line_no += 1
            if isinstance(line, int):
                yield ImportLineError(line_no, self.limits.too_long)
                continue
            try:
                text = decode_line(line_no, line)
                if not text.strip():
                    continue
                yield self._convert(line_no, json_line(line_no, text))
            except ImportLineError as e:
                yield e

    def _line(self) -> bytes | int | None:
        """The next line of the file (None at its end), or, for a line past the conversations'
        limit, its length: it is read a block at a time and dropped, never held whole."""
        pieces: list[bytes] = []
        size = 0
        while piece := self._stream.readline(_BUFFER):
            size += len(piece)
            if size > self.limits.max_conversation_bytes + 1:
                pieces.clear()
            else:
                pieces.append(piece)
            if piece.endswith(b"\n"):
                break
        if not size:
            return None
        return b"".join(pieces) if pieces else size


def _first_line_is_json(start: bytes) -> bool:
    """Whether the file's first line is a whole JSON value (JSONL), not the start of a
    pretty-printed object; a first line longer than the peek is taken for JSONL."""
    line, newline, _rest = start.partition(b"\n")
    if not newline:
        return True
    try:
        json.loads(line)
    except ValueError:
        return False
    return True
