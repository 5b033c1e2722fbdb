"""Turns the store refused for good, kept on this machine with the reason.

A turn the store cannot take (its chat was deleted elsewhere, the server refuses its content) must
neither block the turns after it nor vanish: it is appended to a JSON-lines file beside the store
(mode 0600, in a 0700 folder, flushed to disk before `keep` returns), one line per turn with the
chat it belongs to, when and why it was refused. JSON's escapes keep any text exactly.
"""

from __future__ import annotations

import asyncio
import json
import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from parla.memory.turn import Turn, utcnow


@dataclass(frozen=True)
class RefusedTurn:
    chat_id: str
    turn: Turn
    reason: str
    kept_at: datetime


class RefusedTurns:
    def __init__(self, path: Path) -> None:
        self.path = path

    @staticmethod
    def beside(store_path: Path) -> Path:
        """Where the refused turns of the store at `store_path` are kept."""
        return store_path.with_name(f"{store_path.stem}.refused.jsonl")

    async def keep(self, chat_id: str, turns: list[Turn], reason: str) -> None:
        """Append `turns` with `reason`; on disk when this returns."""
        if turns:
            await asyncio.to_thread(self._append, chat_id, turns, reason)

    def _append(self, chat_id: str, turns: list[Turn], reason: str) -> None:
        now = utcnow().isoformat()
        lines = "".join(
            json.dumps({"chat_id": chat_id, "kept_at": now, "reason": reason, "turn": t.model_dump(mode="json")}) + "\n"
            for t in turns
        )
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            os.write(fd, lines.encode("ascii"))  # ensure_ascii: every character is escaped
            os.fsync(fd)
        finally:
            os.close(fd)

    def read(self) -> list[RefusedTurn]:
        if not self.path.exists():
            return []
        out = []
        for line in self.path.read_text(encoding="ascii").splitlines():
            if line.strip():
                r = json.loads(line)
                turn = Turn.model_validate(r["turn"])
                out.append(RefusedTurn(r["chat_id"], turn, r["reason"], datetime.fromisoformat(r["kept_at"])))
        return out

    def count(self) -> int:
        if not self.path.exists():
            return 0
        with self.path.open("rb") as f:
            return sum(1 for line in f if line.strip())
