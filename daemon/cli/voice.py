"""`parla converse`: a spoken conversation in the foreground, in one chat, until Ctrl-C."""

from __future__ import annotations

from contextlib import suppress
from typing import TYPE_CHECKING

import typer
from rich.markup import escape

from parla.memory.errors import WriteQueued
from parla.records.turn import new_id

from .support import (
    TALK,
    command,
    err,
    load_settings,
    open_memory,
    out,
    resolve_chat,
    running_daemon_chat,
)

if TYPE_CHECKING:  # the voice stack and the SDK load when a conversation starts
    from parla.voice.live.conversation import SessionEvent

    from ..memory_services import MemoryServices


async def chat_for(mem: MemoryServices, ref: str | None, new: bool) -> tuple[str, str]:
    """The chat to talk in and its title: a new one, the one `ref` names, or the most recent one
    that holds something. Empty untitled chats (a `parla new` nobody spoke in, a daemon stopped
    before anything was said) never become the start chat while another holds something; one of
    them serves when a new chat is needed, and the others are deleted on the way, except the one a
    running daemon is in."""
    if ref is not None and not new:
        chat_id = await resolve_chat(mem.store, ref)
        return chat_id, (await mem.store.get_chat(chat_id)).display_title
    in_use = await running_daemon_chat(mem.settings.control_socket)
    recent = spare = None
    for chat in await mem.store.list_chats(limit=50):
        if chat.turn_count == 0 and not chat.title:
            if chat.id == in_use:
                continue
            if spare is None:
                spare = chat
            else:
                await _tidy(mem, chat.id)
        elif recent is None:
            recent = chat
    if new or recent is None:
        if spare is not None:
            return spare.id, "a new chat"
        chat_id = new_id()
        with suppress(WriteQueued):  # the store is away: the chat is on this device and waits in its outbox
            await mem.store.create_chat(chat_id=chat_id)
        return chat_id, "a new chat"
    if spare is not None:
        await _tidy(mem, spare.id)
    return recent.id, recent.display_title


async def _tidy(mem: MemoryServices, chat_id: str) -> None:
    """Delete an empty chat; while the store is away the delete waits in its outbox."""
    with suppress(WriteQueued):
        await mem.store.delete_chat(chat_id)


def _show(event: SessionEvent) -> None:
    if event.kind == "turn":
        out.print(escape(event.detail))
    elif event.kind in ("reconnecting", "gave_up", "save_failed"):
        err.print(f"parla: {event.kind.replace('_', ' ')}: {event.detail}", markup=False)


@command
async def converse(
    chat: str | None = typer.Argument(None, help="Chat id (or its start) to continue; default: the most recent."),
    new: bool = typer.Option(False, "--new", help="Start a new chat."),
) -> None:
    """Talk with Parla through the microphone and speaker until Ctrl-C; every turn is stored."""
    from ..conversation import spoken_conversation

    settings = load_settings()
    async with open_memory(settings) as mem:
        chat_id, title = await chat_for(mem, chat, new)
        async with spoken_conversation(mem, chat_id, on_event=_show) as conversation:
            err.print(f"Talking in {title} ({chat_id[:8]}). Speak; Ctrl-C ends the conversation.", markup=False)
            await conversation.wait()


COMMANDS = {"converse": converse}
PANEL = TALK
