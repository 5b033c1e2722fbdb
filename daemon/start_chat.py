"""Which chat Parla starts in (`parla run`, `parla converse`) when none is named: where the user
last was with Parla, and why, said in words.

"Where the user last was" is, whichever came last:
- the chat of the last turn they spoke or typed through Parla (its answer with it);
- the chat they last chose without a word said since: a switch (by voice, `parla switch`), a new
  chat (`parla new`, "start a new chat"), a chat named at start (`parla run --chat`, `--new`).
  A switch is a choice: a restart goes back there, not to the chat before it.
Imported chats, and chats only looked at (`parla show`, the inspector), never count: their turns
were not said to Parla. This device keeps a note of it beside the store (`LastChat`,
`parla.last-chat.json`), written as it changes. Without the note (the first start on this
device, the chat deleted since), the store is asked: the most recently active chat whose last turn
was said through Parla. Without one, a new chat: the user never talked with Parla, however many
chats they imported."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, get_args

from parla.memory.errors import ChatNotFound, WriteQueued
from parla.records.turn import Turn, new_id

from .private_files import write_private

if TYPE_CHECKING:
    from parla.memory.store.protocol import ChatRecords
    from parla.records.chat import Chat

log = logging.getLogger(__name__)

# How the user came to be in the chat Parla is in: they last talked there, last chose it (a switch,
# a new chat), named it at start (`--chat`, `--new`), or never talked with Parla (a new chat).
Why = Literal["talked", "chose", "asked", "first"]
Noted = Literal["talked", "chose"]  # what the note keeps
SAID: dict[Why, str] = {
    "talked": "where you last talked with Parla",
    "chose": "the chat you last chose",
    "asked": "as you asked",
    "first": "as you have not talked with Parla yet",
}
# Chats looked through (the most recently active first) for one with something said through Parla.
_RECENT = 50


def said_through_parla(turns: Sequence[Turn]) -> bool:
    """Any of these turns was spoken or typed with Parla (or answered by it), not imported."""
    return any(t.source != "import" for t in turns)


class LastChat:
    """This device's note of where the user last was with Parla: a chat and how they came to it.
    Written only when it changes; a note that cannot be written is logged and left (the store
    answers next time), never a reason for a session to fail."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._noted: tuple[str, Noted] | None = None

    @staticmethod
    def beside(store_path: Path) -> Path:
        return store_path.with_name(f"{store_path.stem}.last-chat.json")

    def read(self) -> tuple[str, Noted] | None:
        try:
            note = json.loads(self.path.read_text(encoding="utf-8"))
            chat_id, why = str(note["chat_id"]), note["why"]
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError) as e:
            log.warning("the note of the last chat, %s, cannot be read (%s); the store is asked", self.path, e)
            return None
        return (chat_id, why) if why in get_args(Noted) else None

    def note(self, chat_id: str, why: Noted) -> None:
        if self._noted == (chat_id, why):
            return
        try:
            write_private(self.path, json.dumps({"chat_id": chat_id, "why": why}) + "\n")
        except OSError as e:
            log.warning("the note of the last chat, %s, cannot be written: %s", self.path, e)
            return
        self._noted = (chat_id, why)


@dataclass(frozen=True)
class StartChat:
    chat_id: str
    title: str
    why: Why


async def start_chat(store: ChatRecords, last: LastChat, new: bool, in_use: str | None) -> StartChat:
    """The chat to start in: a new one when `new`, else where the user last was with Parla.

    Empty untitled chats (a `parla new` nobody spoke in, a daemon stopped before anything was said)
    are not kept for nothing: one of them serves when a new chat is needed, the others are deleted
    on the way, except the one the note names and the one a running daemon is in (`in_use`)."""
    noted = None if new else last.read()
    recent = await store.list_chats(limit=_RECENT)
    chosen: StartChat | None = None
    if noted is not None:
        with suppress(ChatNotFound):  # deleted since: the store is asked instead
            chat = await store.get_chat(noted[0])
            chosen = StartChat(chat.id, _title(chat), noted[1])
    if chosen is None and not new:
        for chat in recent:
            if chat.turn_count and said_through_parla(await store.load_turns(chat.id, chat.turn_count)):
                chosen = StartChat(chat.id, _title(chat), "talked")
                break
    kept = {in_use, noted[0] if noted else None}
    empty = [c for c in recent if c.turn_count == 0 and not c.title and c.id not in kept]
    spare = empty[0] if chosen is None and empty else None
    for chat in empty:
        if chat is not spare:
            with suppress(WriteQueued):  # the store is away: the delete waits in its outbox
                await store.delete_chat(chat.id)
    if chosen is not None:
        return chosen
    why: Why = "asked" if new else "first"
    if spare is not None:
        return StartChat(spare.id, "a new chat", why)
    chat_id = new_id()
    with suppress(WriteQueued):  # the store is away: the chat is on this device and waits in its outbox
        await store.create_chat(chat_id=chat_id)
    return StartChat(chat_id, "a new chat", why)


def _title(chat: Chat) -> str:
    return chat.display_title if chat.title or chat.turn_count else "a new chat"
