"""Reading chats for `parla import` and storing them without duplicates.

One chat per line, UTF-8 (a byte-order mark is fine), in either shape:
- Parla's: {"id"?, "title"?, "created_at"?, "turns": [{"role", "text" or "parts", "created_at"?, "thinking"?}]}
- OpenAI/ChatGPT's: {"id"?, "title"?, "messages": [{"role", "content": "..." or [{"type": "text", "text"}]}]}
Roles `user`, `model` and `assistant` (stored as `model`) are imported; `system`, `developer` and
`tool` messages are skipped and counted: they instructed another assistant and were not said in
the chat. A turn longer than the caller's limit is cut, and one too long for a summarising step is
split at paragraph or sentence ends.

Ids are deterministic so that importing the same file again adds nothing, and derived inside the
importing user's own id space (`scope`), so one user's import can never collide with, or reveal,
another user's chat on a shared store. A chat with an id keeps it across imports; a chat without
one is known by its opening turns, so a chat that gained turns since the last import only adds
those. An id that already names one of the user's chats (a UUID from `parla export`, or an
import made before ids were scoped) keeps naming it. A stored chat whose turns differ from the
file's is left alone unless the caller asks to replace it."""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from parla.kernel.tokens import CHARS_PER_TOKEN
from parla.records.chat import Chat
from parla.records.turn import Part, Role, Turn, storable_text, utcnow

from ..errors import ChatNotFound, ImportLineError
from ..language.pieces import split_text
from ..store.protocol import ChatRecords
from .bounds import aware, cut_turn, import_date, untimed_after

_NAMESPACE = uuid.UUID("6f1c4a52-52a4-4c55-9a53-7c1bd0a7c0de")
_ROLES: dict[str, Role] = {"user": "user", "model": "model", "assistant": "model"}
_SKIPPED_ROLES = ("system", "developer", "tool", "function")
# A chat without an id is known by this many opening turns.
_OPENING_TURNS = 2


class ImportTurn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    role: Literal["user", "model", "assistant", "system", "developer", "tool", "function"]
    text: str | None = None
    parts: list[Part] | None = None
    thinking: str | None = None
    created_at: datetime | None = None
    # who answered, for a turn imported from another assistant ("ChatGPT (gpt-4o)")
    model_variant: str | None = None

    @field_validator("text")
    @classmethod
    def _storable(cls, text: str | None) -> str | None:
        # before the chat's id is derived from the text (and hashing needs encodable text)
        return None if text is None else storable_text(text, "a turn's text")

    _in_range = field_validator("created_at")(import_date)

    @model_validator(mode="after")
    def _one_text(self) -> ImportTurn:
        if (self.text is None) == (self.parts is None):
            raise ValueError('give the turn either "text" or "parts", not both or neither')
        if self.role not in _SKIPPED_ROLES and not self.joined.strip():
            raise ValueError("the turn has no text")
        return self

    @property
    def joined(self) -> str:
        return self.text if self.text is not None else "".join(p.text for p in self.parts or [])


class ImportChat(BaseModel):
    model_config = ConfigDict(extra="ignore")

    id: str | None = Field(None, min_length=1)
    title: str | None = None
    created_at: datetime | None = None
    turns: list[ImportTurn] = Field(min_length=1)
    # What was left out of the line or changed, for the report ("1 system message skipped").
    notes: list[str] = Field(default_factory=list, exclude=True)

    _in_range = field_validator("created_at")(import_date)

    @property
    def spoken(self) -> list[ImportTurn]:
        """The turns that were said in the chat (system and tool messages left out)."""
        return [t for t in self.turns if t.role in _ROLES]


def _describe(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "the line"
    more = f" (and {error.error_count() - 1} more problems)" if error.error_count() > 1 else ""
    return f"{where}: {first['msg']}{more}"


def _content_text(content: Any) -> str | None:
    """The text of an OpenAI message's content: a string, or the text parts of a list."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [str(p["text"]) for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
        return "\n".join(texts)
    return None


def _from_messages(data: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    """An OpenAI/ChatGPT-shaped line in Parla's shape; messages without text (tool calls,
    images only) are skipped and counted."""
    messages = data.get("messages")
    if not isinstance(messages, list):
        return data
    turns, textless = [], 0
    for m in messages:
        if not isinstance(m, dict):
            turns.append(m)  # validation says what is wrong with it
            continue
        text = _content_text(m.get("content"))
        if text is None or not text.strip():
            textless += 1
            continue
        turns.append({"role": m.get("role"), "text": text, "created_at": m.get("created_at")})
    if textless:
        notes.append(f"{textless} message{'s' * (textless > 1)} without text skipped (tool calls, images)")
    return {**data, "turns": turns}


def decode_line(line_no: int, raw: bytes) -> str:
    """One line of the file as text: UTF-8, with a byte-order mark allowed at the start."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ImportLineError(
            line_no,
            f"not UTF-8 text (byte 0x{raw[e.start]:02x} at column {e.start + 1}); save the file as UTF-8, "
            "e.g. `iconv -f latin1 -t utf-8 FILE > FILE.utf8`",
        ) from None
    return text.removeprefix("\ufeff") if line_no == 1 else text


def parse_line(line_no: int, line: str) -> ImportChat:
    return chat_of(line_no, json_line(line_no, line))


def json_line(line_no: int, line: str) -> Any:
    try:
        return json.loads(line)
    except json.JSONDecodeError as e:
        raise ImportLineError(line_no, f"not valid JSON ({e.msg} at column {e.colno})") from None
    except RecursionError:  # thousands of nested brackets
        raise ImportLineError(line_no, "JSON nested too deeply to read") from None


def chat_of(number: int, data: Any, what: str = "line", notes: Sequence[str] = ()) -> ImportChat:
    """A chat in Parla's or OpenAI's shape as an ImportChat; `number` and `what` ("line",
    "conversation") say where it was, `notes` what a converter left out of it."""
    if not isinstance(data, dict):
        raise ImportLineError(number, 'expected a JSON object with a "turns" or "messages" list', what)
    notes = list(notes)
    if "turns" not in data:
        data = _from_messages(data, notes)
    try:
        chat = ImportChat.model_validate(data)
    except ValidationError as e:
        left_out = f" ({'; '.join(notes)})" if notes else ""
        raise ImportLineError(number, _describe(e) + left_out, what) from None
    skipped = Counter(t.role for t in chat.turns if t.role not in _ROLES)
    notes += [f"{n} {role} message{'s' * (n > 1)} skipped" for role, n in sorted(skipped.items())]
    if not chat.spoken:
        raise ImportLineError(number, "no user or assistant turn with text (" + "; ".join(notes) + ")", what)
    chat.notes = notes
    return chat


# -- ids ---------------------------------------------------------------------------------------


def _derived(scope: str, key: str) -> str:
    return str(uuid.uuid5(_NAMESPACE, f"user:{scope}\n{key}" if scope else key))


def _legacy_id(given: str) -> str:
    try:
        return str(uuid.UUID(given))
    except ValueError:
        return _derived("", f"id:{given}")


def external_chat_ids(given: str, scope: str = "") -> list[str]:
    """The store ids a chat imported with id `given` may have, the current derivation first."""
    current = _derived(scope, f"id:{given}") if scope else _legacy_id(given)
    return list(dict.fromkeys([current, _legacy_id(given)]))


def _opening_key(chat: ImportChat) -> str:
    opening = [
        [_ROLES[t.role], t.joined, t.created_at.isoformat() if t.created_at else None]
        for t in chat.spoken[:_OPENING_TURNS]
    ]
    return "opening:" + json.dumps([chat.created_at.isoformat() if chat.created_at else None, opening])


def chat_ids_of(chat: ImportChat, scope: str = "") -> list[str]:
    """Where the chat may already be stored; the first is the id a new import gets."""
    if chat.id is not None:
        return external_chat_ids(chat.id, scope)
    # Before opening keys, a chat without an id was keyed by all of its content.
    content = json.dumps([[_ROLES[t.role], t.joined] for t in chat.spoken], ensure_ascii=False)
    return [_derived(scope, _opening_key(chat)), _derived("", f"content:{content}")]


def chat_id_of(chat: ImportChat, scope: str = "") -> str:
    return chat_ids_of(chat, scope)[0]


# -- turns -------------------------------------------------------------------------------------


def turns_of(
    chat: ImportChat,
    chat_id: str,
    now: datetime | None = None,
    max_turn_tokens: int | None = None,
    max_turn_chars: int | None = None,
) -> list[Turn]:
    """Turns with deterministic ids; a turn without a timestamp follows the previous one by a
    second, but not past the import time `now` (the first falls back to the chat's created_at,
    else `now`). A turn over `max_turn_chars` keeps its first part, one over `max_turn_tokens`
    becomes several turns of the same speaker (each noted in `chat.notes`)."""
    namespace = uuid.UUID(chat_id)
    now = now or utcnow()
    previous = aware(chat.created_at) if chat.created_at else None
    turns: list[Turn] = []
    max_chars = max_turn_tokens * CHARS_PER_TOKEN if max_turn_tokens else None
    noted = set(chat.notes)
    for number, t in enumerate(chat.spoken, start=1):
        created = aware(t.created_at) if t.created_at else (untimed_after(previous, now) if previous else now)
        previous = created
        joined = t.joined
        text, size, changed = joined, f"{len(joined):,} characters", []
        if max_turn_chars is not None and len(joined) > max_turn_chars:
            text, size = cut_turn(joined, max_turn_chars)
            changed.append(f"cut to its first {max_turn_chars:,} characters (import_max_turn_chars)")
        texts = split_text(text, max_chars) if max_chars is not None and len(text) > max_chars else [text]
        if len(texts) > 1:
            changed.append(f"split into {len(texts)} turns")
        note = f"turn {number} ({size}) " + " and ".join(changed)
        if changed and note not in noted:
            noted.add(note)
            chat.notes.append(note)
        for i, piece in enumerate(texts):
            parts = t.parts if t.parts is not None and piece is joined else [Part(text=piece)]
            turns.append(
                Turn(
                    id=str(uuid.uuid5(namespace, str(len(turns)))),
                    role=_ROLES[t.role],
                    parts=parts,
                    thinking=t.thinking if i == len(texts) - 1 else None,
                    created_at=created,
                    source="import",
                    model_variant=t.model_variant,
                )
            )
    return turns


# -- storing -----------------------------------------------------------------------------------

Outcome = Literal["imported", "added", "unchanged", "differs", "replaced"]


@dataclass
class ImportResult:
    chat_id: str
    outcome: Outcome
    turns_added: int = 0
    detail: str = ""
    notes: list[str] = field(default_factory=list)


def _said(turns: Sequence[Turn]) -> list[tuple[str, str]]:
    return [(t.role, t.text) for t in turns]


async def _stored_turns(store: ChatRecords, ids: list[str]) -> tuple[str, list[Turn] | None]:
    for cid in ids:
        try:
            return cid, await store.load_turns(cid)
        except ChatNotFound:
            continue
    return ids[0], None


async def import_chat(
    store: ChatRecords,
    chat: ImportChat,
    *,
    scope: str = "",
    replace: bool = False,
    max_turn_tokens: int | None = None,
    max_turn_chars: int | None = None,
) -> ImportResult:
    """Store one parsed chat: new, or the turns it gained since the last import, or nothing when
    the stored chat already holds it. A stored chat whose turns differ from the file's is left
    as it is (`differs`), or with `replace` deleted and imported again, unless it holds turns
    said in Parla after the import, which a replacement would lose."""
    cid, stored = await _stored_turns(store, chat_ids_of(chat, scope))
    turns = turns_of(chat, cid, max_turn_tokens=max_turn_tokens, max_turn_chars=max_turn_chars)
    if stored is None:
        return await _create(store, chat, cid, turns, "imported")
    have, given = _said(stored), _said(turns)
    common = min(len(have), len(given))
    if have[:common] == given[:common]:
        if len(given) <= len(have):
            return ImportResult(cid, "unchanged", notes=chat.notes)
        added = (await store.append_turns(cid, turns[len(have) :])).added
        return ImportResult(cid, "added", added, notes=chat.notes)
    first = next(i for i in range(common) if have[i] != given[i]) + 1
    detail = f"turn {first} differs from the stored chat's"
    said_here = sum(t.source != "import" for t in stored)
    if not replace:
        return ImportResult(cid, "differs", detail=detail, notes=chat.notes)
    if said_here:
        return ImportResult(
            cid,
            "differs",
            detail=f"{detail}, and the stored chat has {said_here} turns said in Parla since: not replaced",
            notes=chat.notes,
        )
    await store.delete_chat(cid)
    return await _create(store, chat, cid, turns, "replaced", detail)


async def _create(
    store: ChatRecords, chat: ImportChat, cid: str, turns: list[Turn], outcome: Outcome, detail: str = ""
) -> ImportResult:
    """Store the chat anew; a chat that an import running beside this one stored first (some
    turns were already there) is reported as gaining turns or as already there, not as a
    second chat imported."""
    added = (await store.create_chat(chat_id=cid, title=chat.title, created_at=chat.created_at, turns=turns)).added
    if added < len(turns):
        outcome = "added" if added else "unchanged"
    return ImportResult(cid, outcome, added, detail=detail, notes=chat.notes)


async def find_chats_named(store: ChatRecords, ref: str) -> list[Chat]:
    """The chats `ref` names: an id, the start of one, an exact title, or the id a chat was
    imported with (in the user's id space)."""
    chats = await store.find_chats(ref)
    for cid in [] if chats or not ref.strip() else external_chat_ids(ref.strip(), await id_scope(store)):
        chats = chats or await store.find_chats(cid)
    return chats


async def id_scope(store: ChatRecords) -> str:
    """The id space of imports: the signed-in user on a shared store, none on a local one."""
    user_id = getattr(store, "user_id", None)
    return str(await user_id()) if user_id is not None else ""
