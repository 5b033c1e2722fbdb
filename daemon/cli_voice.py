"""`parla converse`: a spoken conversation in the foreground, in one chat, until Ctrl-C."""

from __future__ import annotations

import typer
from rich.markup import escape

from daemon.cli_support import command, err, load_settings, out, resolve_chat
from daemon.conversation import spoken_conversation
from daemon.memory_services import MemoryServices, open_memory
from voice.live import SessionEvent


async def chat_for(mem: MemoryServices, ref: str | None, new: bool) -> tuple[str, str]:
    """The chat to talk in and its title: a new one, the one `ref` names, or the most recent."""
    if new:
        chat = (await mem.store.create_chat()).chat
        return chat.id, "a new chat"
    if ref is None:
        recent = await mem.store.list_chats(limit=1)
        if not recent:
            chat = (await mem.store.create_chat()).chat
            return chat.id, "a new chat"
        return recent[0].id, recent[0].display_title
    chat_id = await resolve_chat(mem, ref)
    return chat_id, (await mem.store.get_chat(chat_id)).display_title


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
    settings = load_settings()
    async with open_memory(settings) as mem:
        chat_id, title = await chat_for(mem, chat, new)
        async with spoken_conversation(mem, chat_id, on_event=_show) as conversation:
            err.print(f"Talking in {title} ({chat_id[:8]}). Speak; Ctrl-C ends the conversation.", markup=False)
            await conversation.wait()
