"""What the export formats share on their way to Parla's import shape: times, turns of one
speaker in a row, markers for what was not text, and the notes saying what was left out."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from typing import Any

# An epoch above this is in milliseconds (year 5138 in seconds).
_MILLISECONDS = 10**11


def iso_time(value: Any) -> str | None:
    """An export's time (epoch seconds or milliseconds, or an ISO string) as ISO 8601, or None."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        seconds = value / 1000 if value > _MILLISECONDS else value
        try:
            return datetime.fromtimestamp(seconds, UTC).isoformat()
        except (OverflowError, OSError, ValueError):
            return None
    return value if isinstance(value, str) and value else None


def marker(what: str) -> str:
    """The short text a part that is not text leaves in its turn ("[image]")."""
    return f"[{what}]"


class Turns:
    """Turns being built in order; a message of the same speaker as the one before joins its turn
    (a tool call, its hidden result and the answer after it are one answer for the reader). A
    turn's pieces are joined once, in `turns`: joined at each message, a run of 40,000 messages of
    one speaker took 48 s."""

    def __init__(self) -> None:
        self._turns: list[dict[str, Any]] = []
        self.left_out: Counter[str] = Counter()

    def add(
        self, role: str, text: str, created_at: Any = None, model_variant: str | None = None, thinking: str = ""
    ) -> None:
        text = text.strip()
        if not text:
            return
        last = self._turns[-1] if self._turns else None
        if last is not None and last["role"] == role:
            last["text"].append(text)
            last["model_variant"] = last["model_variant"] or model_variant
            last["thinking"] += [thinking] if thinking else []
            return
        self._turns.append(
            {
                "role": role,
                "text": [text],
                "created_at": iso_time(created_at),
                "model_variant": model_variant,
                "thinking": [thinking] if thinking else [],
            }
        )

    @property
    def turns(self) -> list[dict[str, Any]]:
        """The turns in Parla's import shape."""
        return [
            {**turn, "text": "\n\n".join(turn["text"]), "thinking": "\n\n".join(turn["thinking"]) or None}
            for turn in self._turns
        ]

    def skip(self, what: str, count: int = 1) -> None:
        self.left_out[what] += count

    def notes(self) -> list[str]:
        return [f"{what}: {n} left out" for what, n in sorted(self.left_out.items()) if n]


def branch_to(nodes: dict[str, dict[str, Any]], leaf: Any, parent_key: str) -> list[str]:
    """The ids from the root to `leaf` in a tree of messages (ChatGPT's, Open WebUI's), each node
    naming its parent under `parent_key`; a cycle ends the walk rather than looping. Linear in the
    branch's length: a branch of 40,000 messages took 18.5 s when each step searched the path."""
    path: list[str] = []
    seen: set[str] = set()
    while isinstance(leaf, str) and leaf in nodes and leaf not in seen:
        path.append(leaf)
        seen.add(leaf)
        leaf = nodes[leaf].get(parent_key)
    return path[::-1]


def side_branches(nodes: dict[str, dict[str, Any]], path: list[str], parent_key: str) -> int:
    """The branches left out: each node off `path` whose parent is on it starts one (an answer
    regenerated, a question edited)."""
    on_path = set(path)
    return sum(1 for node_id, node in nodes.items() if node.get(parent_key) in on_path and node_id not in on_path)
