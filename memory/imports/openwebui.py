"""Open WebUI's chat export (Settings → Chats → Export, or a chat's own Export → JSON): a JSON array
of chats, each `{id, title, chat: {history: {messages: {id: {parentId, childrenIds, role, content,
timestamp, model}}, currentId}}, created_at}`. Like ChatGPT's, the history is a tree: the branch
that ends at `currentId` is imported, the regenerated and edited ones are left out and counted."""

from __future__ import annotations

from typing import Any

from .shape import Turns, branch_to, iso_time, side_branches

NAME = "Open WebUI export"
_ROLES = {"user": "user", "assistant": "model"}


def matches(chat: dict[str, Any]) -> bool:
    body = chat.get("chat")
    return isinstance(body, dict) and isinstance(body.get("history"), dict)


def to_import_shape(chat: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The chat in Parla's import shape, and what was left out of it."""
    history = chat["chat"]["history"]
    given = history.get("messages")
    messages = {k: m for k, m in given.items() if isinstance(m, dict)} if isinstance(given, dict) else {}
    path = branch_to(messages, history.get("currentId"), "parentId")
    turns = Turns()
    turns.skip("regenerated or edited branches", side_branches(messages, path, "parentId"))
    for message_id in path:
        message = messages[message_id]
        role = _ROLES.get(str(message.get("role")))
        content = message.get("content")
        if role is None or not isinstance(content, str):
            turns.skip("system messages")
            continue
        model = message.get("modelName") or message.get("model")
        variant = (f"Open WebUI ({model})" if model else "Open WebUI") if role == "model" else None
        turns.add(role, content, message.get("timestamp"), variant)
    body = chat["chat"]
    shaped = {
        "id": chat.get("id") or body.get("id"),
        "title": chat.get("title") or body.get("title") or None,
        "created_at": iso_time(chat.get("created_at") or body.get("timestamp")),
        "turns": turns.turns,
    }
    return shaped, turns.notes()
