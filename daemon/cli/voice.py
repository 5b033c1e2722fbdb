"""`parla converse`: a spoken conversation in the foreground, in one chat, until Ctrl-C."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer
from rich.markup import escape

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
    from ..start_chat import StartChat


async def chat_for(mem: MemoryServices, ref: str | None, new: bool) -> StartChat:
    """The chat to talk in, its title and how the user came to it: the one `ref` names, a new one,
    or where the user last was with Parla (daemon.start_chat). A chat named or a new chat asked
    for is noted as the user's choice, for the next start."""
    from ..start_chat import StartChat, start_chat

    if ref is not None and not new:
        chat_id = await resolve_chat(mem.store, ref)
        started = StartChat(chat_id, (await mem.store.get_chat(chat_id)).display_title, "asked")
    else:
        in_use = await running_daemon_chat(mem.settings.control_socket)
        started = await start_chat(mem.store, mem.last_chat, new, in_use)
    if started.why == "asked":
        mem.last_chat.note(started.chat_id, "chose")
    return started


def _show(event: SessionEvent) -> None:
    if event.kind == "turn":
        out.print(escape(event.detail))
    elif event.kind in ("reconnecting", "gave_up", "save_failed"):
        err.print(f"parla: {event.kind.replace('_', ' ')}: {event.detail}", markup=False)


@command
async def converse(
    chat: str | None = typer.Argument(
        None, help="Chat id (or its start) to continue; default: where you last talked with Parla or last chose."
    ),
    new: bool = typer.Option(False, "--new", help="Start a new chat."),
) -> None:
    """Talk with Parla through the microphone and speaker until Ctrl-C; every turn is stored."""
    from ..conversation import spoken_conversation
    from ..start_chat import SAID

    settings = load_settings()
    async with open_memory(settings) as mem:
        started = await chat_for(mem, chat, new)
        async with spoken_conversation(mem, started.chat_id, on_event=_show) as conversation:
            where = f"{started.title} ({started.chat_id[:8]}), {SAID[started.why]}"
            err.print(f"Talking in {where}. Speak; Ctrl-C ends the conversation.", markup=False)
            await conversation.wait()


COMMANDS = {"converse": converse}
PANEL = TALK
