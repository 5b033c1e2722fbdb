"""ChatGPT's data export (`conversations.json`, alone or in the .zip ChatGPT mails): a JSON array
of conversations, each a tree of messages (`mapping`: node id → {message, parent, children})
whose visible branch ends at `current_node`.

Only that branch is imported: the answers the user regenerated and the questions they edited
branch off it and are left out (and counted). System messages, the user's custom instructions,
messages ChatGPT hides and tool messages (search results, code output) are left out too; what the
user or ChatGPT said that is not text (an image, code ChatGPT ran, a web search) stays in its turn
as a short marker. ChatGPT's conversation id becomes the import id, so a newer export of the same
account adds only what is new."""

from __future__ import annotations

from typing import Any

from .shape import Turns, branch_to, iso_time, marker, side_branches

NAME = "ChatGPT export"
_ROLES = {"user": "user", "assistant": "model"}
# content types that are a message's text, and markers for those that are not
_TEXT_TYPES = ("text", "multimodal_text")
_MARKERS = {
    "code": "code run",
    "execution_output": "code output",
    "tether_browsing_display": "web browsing",
    "tether_quote": "web quote",
    "image_asset_pointer": "image",
    "audio_asset_pointer": "audio",
    "real_time_user_audio_video_asset_pointer": "audio",
}
# never shown in the conversation: custom instructions, the model's hidden reasoning, errors
_HIDDEN_TYPES = ("user_editable_context", "thoughts", "reasoning_recap", "system_error", "model_editable_context")


def matches(conversation: dict[str, Any]) -> bool:
    return isinstance(conversation.get("mapping"), dict)


def _branch(mapping: dict[str, dict[str, Any]], leaf: Any) -> list[str]:
    """The node ids from the root to `leaf`; without a current node, to the newest child at each
    step (the branch ChatGPT shows)."""
    if not isinstance(leaf, str) or leaf not in mapping:
        leaf = next((k for k, n in mapping.items() if n.get("parent") not in mapping), None)
        visited: set[str] = set()
        while leaf is not None and leaf not in visited:
            visited.add(leaf)
            children = [c for c in mapping[leaf].get("children") or [] if c in mapping]
            if not children:
                break
            leaf = children[-1]
    return branch_to(mapping, leaf, "parent")


def _text(content: dict[str, Any]) -> str:
    kind = content.get("content_type")
    if kind in _TEXT_TYPES:
        pieces = []
        for part in content.get("parts") or []:
            if isinstance(part, str):
                pieces.append(part)
            elif isinstance(part, dict):
                # a voice chat's parts carry their transcription beside the audio
                said = part.get("text") if part.get("content_type") == "audio_transcription" else None
                pieces.append(
                    said if isinstance(said, str) else marker(_MARKERS.get(str(part.get("content_type")), "attachment"))
                )
        return "\n".join(pieces)
    return marker(_MARKERS.get(str(kind), str(kind or "attachment").replace("_", " ")))


def _tool_call(recipient: str, content: dict[str, Any]) -> str:
    if recipient.startswith(("browser", "web")):
        return "web search"
    return _MARKERS["code"] if content.get("content_type") == "code" else "tool call"


def _model(message: dict[str, Any]) -> str:
    slug = (message.get("metadata") or {}).get("model_slug")
    return f"ChatGPT ({slug})" if isinstance(slug, str) and slug else "ChatGPT"


def to_import_shape(conversation: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The conversation in Parla's import shape, and what was left out of it."""
    mapping = {k: n for k, n in conversation["mapping"].items() if isinstance(n, dict)}
    path = _branch(mapping, conversation.get("current_node"))
    turns = Turns()
    turns.skip("regenerated or edited branches", side_branches(mapping, path, "parent"))
    for node_id in path:
        message = mapping[node_id].get("message")
        if not isinstance(message, dict):
            continue  # the tree's empty root
        role = (message.get("author") or {}).get("role")
        content = message.get("content") or {}
        metadata = message.get("metadata") or {}
        if role not in _ROLES or metadata.get("is_visually_hidden_from_conversation"):
            turns.skip("hidden system and tool messages")
            continue
        if not isinstance(content, dict) or content.get("content_type") in _HIDDEN_TYPES:
            turns.skip("hidden system and tool messages")
            continue
        # ChatGPT's messages to its tools (a search, code to run) are not said to the user: a marker
        recipient = message.get("recipient")
        text = _text(content) if recipient in (None, "all") else marker(_tool_call(str(recipient), content))
        variant = _model(message) if role == "assistant" else None
        turns.add(_ROLES[role], text, message.get("create_time"), variant)
    chat = {
        "id": conversation.get("conversation_id") or conversation.get("id"),
        "title": conversation.get("title") or None,
        "created_at": iso_time(conversation.get("create_time")),
        "turns": turns.turns,
    }
    return chat, turns.notes()
