"""Turns the store did not take, kept on this machine with the reason.

A turn the store cannot take (its chat was deleted elsewhere, the server refuses its content), or
could not take in time (the session closed, the daemon stopped, while the store was locked), must
neither block the turns after it nor vanish: it is appended to a JSON-lines file beside the store
(mode 0600, in a 0700 folder, flushed to disk before `keep` returns), one line per turn with the
chat it belongs to, when and why it was kept. JSON's escapes keep any text exactly. `replay`
offers them to the store again (the daemon does at start): appends are idempotent by turn id, so
a turn stored meanwhile is not stored twice; the turns the store takes leave the file.

The same kind of file, at its own path (`held_beside`), keeps the turns a voice session holds back
from the store a while (an answer the speaker still plays): `forget` drops them once their final
version is stored. A last line torn by a kill in the middle of its write is skipped (and logged),
and goes at the next replay.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from parla.records.turn import Turn, utcnow

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RefusedTurn:
    chat_id: str
    turn: Turn
    reason: str
    kept_at: datetime


@dataclass(frozen=True)
class Replayed:
    stored: int  # turns the store took (or already held)
    left: int  # turns the store did not take this time either, still kept
    error: str | None = None  # why, the last time


class RefusedTurns:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = asyncio.Lock()  # a replay rewrites the file: no keep may land in between

    @staticmethod
    def beside(store_path: Path) -> Path:
        """Where the refused turns of the store at `store_path` are kept."""
        return store_path.with_name(f"{store_path.stem}.refused.jsonl")

    @staticmethod
    def held_beside(refused_path: Path) -> Path:
        """Where the held turns are kept beside the refused turns at `refused_path`."""
        name = refused_path.name.removesuffix(".jsonl").removesuffix(".refused")
        return refused_path.with_name(f"{name}.held.jsonl")

    async def keep(self, chat_id: str, turns: list[Turn], reason: str) -> None:
        """Append `turns` with `reason`; on disk when this returns."""
        if turns:
            async with self._lock:
                now = utcnow()
                lines = _lines([RefusedTurn(chat_id, t, reason, now) for t in turns])
                await asyncio.to_thread(self._write, lines, os.O_APPEND, self.path)

    def _write(self, lines: str, mode: int, path: Path) -> None:
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | mode, 0o600)
        try:
            os.write(fd, lines.encode("ascii"))  # ensure_ascii: every character is escaped
            os.fsync(fd)
        finally:
            os.close(fd)

    async def replay(self, append: Callable[[str, list[Turn]], Awaitable[object]]) -> Replayed:
        """Offer every kept turn to `append(chat_id, turns)` again, a chat's run of turns at a
        time, in the order kept (a turn kept more than once, once); what it takes leaves the file,
        the rest stays as it was."""
        async with self._lock:
            kept = await asyncio.to_thread(self.read)
            # a turn kept twice (kept while it waited, then again when its session closed) goes once
            first: dict[str, RefusedTurn] = {}
            for k in kept:
                first.setdefault(k.turn.id, k)
            kept = list(first.values())
            left: list[RefusedTurn] = []
            error = None
            runs: list[list[RefusedTurn]] = []
            for entry in kept:
                if runs and runs[-1][0].chat_id == entry.chat_id:
                    runs[-1].append(entry)
                else:
                    runs.append([entry])
            for run in runs:
                try:
                    await append(run[0].chat_id, [e.turn for e in run])
                except Exception as e:  # noqa: BLE001 - the turns stay kept; the caller says why
                    left += run
                    error = f"{type(e).__name__}: {e}"
            if kept or self.path.exists():  # a file of a torn line only goes too
                await asyncio.to_thread(self._rewrite, _lines(left))
            return Replayed(len(kept) - len(left), len(left), error)

    async def forget(self, ids: set[str]) -> None:
        """Drop the turns with these ids from the file (gone once none is left); on disk when
        this returns."""
        if ids:
            async with self._lock:
                await asyncio.to_thread(self._forget, ids)

    def _forget(self, ids: set[str]) -> None:
        kept = self.read()
        left = [k for k in kept if k.turn.id not in ids]
        if len(left) < len(kept) or not kept:
            self._rewrite(_lines(left))

    def _rewrite(self, lines: str) -> None:
        if not lines:
            self.path.unlink(missing_ok=True)
            return
        fresh = self.path.with_name(self.path.name + ".new")
        self._write(lines, os.O_TRUNC, fresh)
        os.replace(fresh, self.path)

    def read(self) -> list[RefusedTurn]:
        """The kept turns; a torn last line (no line end: the process died writing it) is
        skipped with a warning. Any other line that does not read raises ValueError."""
        if not self.path.exists():
            return []
        text = self.path.read_text(encoding="ascii")
        lines = text.split("\n")
        out = []
        for i, line in enumerate(lines):
            if not line.strip():
                continue
            try:
                r = json.loads(line)
                turn = Turn.model_validate(r["turn"])
                out.append(RefusedTurn(r["chat_id"], turn, r["reason"], datetime.fromisoformat(r["kept_at"])))
            except (ValueError, KeyError, TypeError) as e:
                if i < len(lines) - 1:  # a whole line: the file is damaged, not torn
                    raise ValueError(f"{self.path}, line {i + 1}: {e}") from e
                log.warning(
                    "%s ends in a torn line (%d bytes, written when the process died); skipped",
                    self.path,
                    len(line),
                    extra={"event": "kept_torn_line"},
                )
        return out

    def count(self) -> int:
        if not self.path.exists():
            return 0
        with self.path.open("rb") as f:
            return sum(1 for line in f if line.strip())


def _lines(kept: list[RefusedTurn]) -> str:
    return "".join(
        json.dumps(
            {
                "chat_id": k.chat_id,
                "kept_at": k.kept_at.isoformat(),
                "reason": k.reason,
                "turn": k.turn.model_dump(mode="json"),
            }
        )
        + "\n"
        for k in kept
    )
