"""Filling this device's copy of a remote store with every chat in it, in the background.

The copy holds what this device wrote or read; a chat only other devices wrote would be missing
from it while the remote is away, and a switch or a search offline would not find it. `CopyFill`
walks the remote's chats every `every_s` seconds (the first time `after_s` after it starts, so the
daemon's start and a first session come first) and brings each into the copy as far as it is
behind (`LocalCopyStore.fill_chat`: the row, the turns in pages, the pins), pausing `pause_s`
between chats so the fill's share of the network and of the server stays small. A chat the copy
holds whole costs no request but its place in the listing, so a round stopped midway (the remote
away, the daemon stopped) resumes where it stood: nothing copied is asked for again.

One task, owned by whoever enters the fill (the daemon); one round at a time. When a round has
reached every chat the remote listed, the time it began is kept beside the copy (a small file,
0600), so `parla status` can say, across restarts, up to when offline reads answer for every chat.
Words and titles find a filled chat offline (its turns are indexed as they are copied); its
vectors stay on the server, and a chat deleted on another device stays in the copy.
"""

from __future__ import annotations

import asyncio
import json
import logging
from datetime import datetime
from pathlib import Path
from typing import Self

from parla.kernel.owners import replace_private
from parla.kernel.tasks import cancel_and_wait
from parla.records.chat import Chat
from parla.records.progress import CopyFillProgress
from parla.records.turn import utcnow

from ..errors import StoreError, StoreOffline
from .local_copy import LocalCopyStore

log = logging.getLogger(__name__)

# A round the remote's absence stopped is tried again this soon (or at `every_s`, if sooner).
OFFLINE_RETRY_S = 60.0


def filled_marker(copy_path: Path) -> Path:
    """Where the time of the last complete fill is kept: beside the copy."""
    return copy_path.with_name(copy_path.name + ".filled")


class CopyFill:
    """Fills `copy` with every chat of its remote: a round every `every_s` seconds (0: never), the
    first `after_s` after the start, `pause_s` between chats, `page` chats or turns a request. Use
    as `async with`."""

    def __init__(
        self, copy: LocalCopyStore, marker: Path, *, every_s: float, pause_s: float, page: int, after_s: float = 0.0
    ) -> None:
        self.copy = copy
        self.marker = marker
        self.every_s = every_s
        self.after_s = after_s
        self.pause_s = pause_s
        self.page = page
        self.progress = CopyFillProgress(filled_at=_read_marker(marker))
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Self:
        if self.every_s > 0:
            self._task = asyncio.create_task(self._run(), name="copy-fill")
        return self

    async def __aexit__(self, *exc: object) -> None:
        await cancel_and_wait(self._task)
        self._task = None

    async def _run(self) -> None:
        await asyncio.sleep(self.after_s)
        while True:
            try:
                await self.fill()
                wait = self.every_s
            except StoreOffline as e:  # the round resumes where it stood once the remote answers
                self.progress.state, self.progress.error = "offline", str(e)
                wait = min(self.every_s, OFFLINE_RETRY_S)
            except StoreError as e:
                self.progress.state, self.progress.error = "failed", str(e)
                log.warning("the local copy was not filled: %s", e, extra={"event": "copy_fill_failed"})
                wait = self.every_s
            except Exception as e:  # a bug here must not end the fill for the daemon's life
                self.progress.state, self.progress.error = "failed", f"{type(e).__name__}: {e}"
                log.exception("the local copy's fill failed", extra={"event": "copy_fill_failed"})
                wait = self.every_s
            await asyncio.sleep(wait)

    async def fill(self) -> int:
        """One round: every chat the remote lists brought into the copy; how many needed it."""
        began = utcnow()
        self.progress.state, self.progress.error = "filling", None
        chats = await self._listed()
        self.progress.chats_done, self.progress.chats_total = 0, len(chats)
        copied = 0
        for chat in chats:
            copied += await self.copy.fill_chat(chat, self.page)
            self.progress.chats_done += 1
            await asyncio.sleep(self.pause_s)
        self.progress.state, self.progress.filled_at = "done", began
        await asyncio.to_thread(_write_marker, self.marker, began)
        log.info(
            "the local copy holds every chat on the server (%d brought up to date)",
            copied,
            extra={"event": "copy_filled", "chats": len(chats), "copied": copied},
        )
        return copied

    async def _listed(self) -> list[Chat]:
        """Every chat the remote lists, each once (a chat that moves up the list while it is read
        in pages would be listed twice; one that moves down may be missed, and the next round has it)."""
        chats: dict[str, Chat] = {}
        offset = 0
        while page := await self.copy.remote.list_chats(self.page, offset):
            chats.update((c.id, c) for c in page if c.id not in chats)
            offset += len(page)
            if len(page) < self.page:
                break
        return list(chats.values())


def _read_marker(path: Path) -> datetime | None:
    try:
        return datetime.fromisoformat(json.loads(path.read_text(encoding="utf-8"))["filled_at"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _write_marker(path: Path, began: datetime) -> None:
    replace_private(path, json.dumps({"filled_at": began.isoformat()}))
