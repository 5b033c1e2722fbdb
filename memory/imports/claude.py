"""Claude's data export (`conversations.json`, alone or in the .zip Anthropic mails): a JSON array
of conversations (`uuid`, `name`, `created_at`, `chat_messages`), each message with its `sender`
(human or assistant), its `text` and, in newer exports, its `content` blocks (text, thinking,
tool use and results), plus the files the user attached.

Text blocks are the turn; Claude's thinking is kept as the turn's thinking; a tool call, and a
file or attachment, leaves a short marker; tool results are left out (counted)."""

from __future__ import annotations

from typing import Any

from .shape import Turns, iso_time, marker

NAME = "Claude export"
_ROLES = {"human": "user", "user": "user", "assistant": "model"}


def matches(conversation: dict[str, Any]) -> bool:
    return isinstance(conversation.get("chat_messages"), list)


def _said(message: dict[str, Any], turns: Turns) -> tuple[str, str]:
    """The message's text (with its markers) and Claude's thinking."""
    pieces: list[str] = []
    thinking: list[str] = []
    blocks = message.get("content")
    for block in blocks if isinstance(blocks, list) else []:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text" and isinstance(block.get("text"), str):
            pieces.append(block["text"])
        elif kind == "thinking" and isinstance(block.get("thinking"), str):
            thinking.append(block["thinking"])
        elif kind == "tool_use":
            pieces.append(marker(f"tool: {block.get('name') or 'unnamed'}"))
        elif kind == "tool_result":
            turns.skip("tool results")
    if not pieces and isinstance(message.get("text"), str):
        pieces.append(message["text"])  # older exports: the text alone
    for file in [*(message.get("attachments") or []), *(message.get("files") or [])]:
        name = file.get("file_name") if isinstance(file, dict) else None
        pieces.append(marker(f"file: {name}" if name else "file"))
    return "\n".join(p for p in pieces if p.strip()), "\n".join(thinking)


def to_import_shape(conversation: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The conversation in Parla's import shape, and what was left out of it."""
    turns = Turns()
    for message in conversation["chat_messages"]:
        role = _ROLES.get(str(message.get("sender")).lower()) if isinstance(message, dict) else None
        if role is None:
            turns.skip("messages of another sender")
            continue
        text, thinking = _said(message, turns)
        turns.add(role, text, message.get("created_at"), "Claude" if role == "model" else None, thinking)
    chat = {
        "id": conversation.get("uuid"),
        "title": conversation.get("name") or None,
        "created_at": iso_time(conversation.get("created_at")),
        "turns": turns.turns,
    }
    return chat, turns.notes()
