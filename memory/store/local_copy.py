"""A remote store with a local copy on this device, so the user's chats stay reachable offline.

`LocalCopyStore` composes a remote store (Supabase, whose writes wait in its outbox while it is
away) with an embedded SQLite store holding a copy of what this device wrote or read: the chats it
listed, their titles, the turns, pins and windows it stored or loaded, the summaries, facts and
vectors its compaction made.

- Online, every call goes to the remote store (its RPCs stay the path) and what it wrote or
  answered is copied into the local store on the way; a failure of the copy is logged and never
  fails the call.
- When the remote store does not answer (`StoreOffline`), reads are answered from the copy, so
  switching, listing, recalling and forgetting work; chats added on other devices meanwhile are
  missing from it. A write the user asks for is applied to the copy and waits in the outbox
  (`WriteQueued` is raised on, so the caller can say it will reach the other devices later).
  Background writes (a compaction, an index) fail as before and are tried again later; while
  reads come from the copy they are not sent either, since the copy may lack other devices' turns.
- `pending_writes().offline` says whether the last request found the server away; for
  `recheck_s` after that, reads go to the copy without trying the remote. Writes are tried (and
  queued) as before, and one that reaches the server (or a `flush`) ends it.

Sequence numbers: turns are copied in the remote's order; a chat this device is behind on is
brought up to date from the remote before a turn is copied (one request, only when behind). Turns
said offline in a chat another device also talked in take the next numbers locally; the remote's
numbers (which interleave both devices' turns) win for everything read online.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import TypeVar

import numpy as np

from parla.records.chat import Chat, ChatHistory
from parla.records.embedding import EmbeddedText
from parla.records.facts import FactBlock
from parla.records.pins import Pin
from parla.records.profile import ProfileEntry
from parla.records.progress import PendingWrites
from parla.records.reminder import Reminder
from parla.records.stats import MemoryStats
from parla.records.summary import Summary, SummaryLevel
from parla.records.turn import MessageRange, Turn, new_id

from ..errors import ChatNotFound, StoreError, StoreOffline, WriteQueued
from .protocol import (
    AppendResult,
    ChatMatch,
    ChatStore,
    CompactionCommit,
    EmbeddedWindow,
    MemorySnapshot,
    QueueState,
    StoredText,
    TextMatch,
    TextRef,
    TurnMatch,
    WordCounts,
)

log = logging.getLogger(__name__)

T = TypeVar("T")


class LocalCopyStore:
    """`ChatStore` over `remote`, with `local` as this device's copy. The caller opens and closes both."""

    def __init__(self, remote: ChatStore, local: ChatStore, recheck_s: float = 30.0) -> None:
        """`recheck_s`: once the remote was found away, reads go to the copy alone for that long
        (a network that drops packets would otherwise cost each read the remote's timeout)."""
        self.remote = remote
        self.local = local
        self.recheck_s = recheck_s
        self._away_until = 0.0  # monotonic time until which reads skip the remote

    @property
    def offline(self) -> bool:
        """The last request to the remote found it away."""
        return self._away_until > 0

    @offline.setter
    def offline(self, away: bool) -> None:
        self._away_until = time.monotonic() + self.recheck_s if away else 0.0

    # -- the two paths ---------------------------------------------------------------------

    async def _read(
        self,
        remote: Callable[[], Awaitable[T]],
        local: Callable[[], Awaitable[T]],
        copy: Callable[[T], Awaitable[object]] | None = None,
    ) -> T:
        """The remote's answer (copied with `copy`), or the local copy's when the remote is away."""
        if time.monotonic() < self._away_until:
            return await local()
        try:
            return await self._reach(remote, copy)
        except StoreOffline:
            return await local()

    async def _write(self, remote: Callable[[], Awaitable[T]], copy: Callable[[T | None], Awaitable[object]]) -> T:
        """The remote's write, copied locally (`copy` gets its result); a write queued in the
        outbox is applied to the copy (`copy` gets None) and `WriteQueued` raised on."""
        try:
            return await self._reach(remote, copy)
        except WriteQueued:
            await self._copy(copy(None))
            raise

    async def _background(
        self, remote: Callable[[], Awaitable[T]], copy: Callable[[T], Awaitable[object]] | None = None
    ) -> T:
        """A write the device makes by itself (compaction, index): the remote's, copied. Refused
        while reads come from the copy: what it was made from may lack what other devices added
        (their turns shift the numbers), so it is made again from the remote's answers later."""
        if self.offline:
            raise StoreOffline("Supabase was away a moment ago: this waits until it answers again")
        return await self._reach(remote, copy)

    async def _reach(
        self, remote: Callable[[], Awaitable[T]], copy: Callable[[T], Awaitable[object]] | None = None
    ) -> T:
        """The remote's call, copied; whether it answered sets `offline`."""
        try:
            result = await remote()
        except StoreOffline:
            self.offline = True
            raise
        self.offline = False
        if copy is not None:
            await self._copy(copy(result))
        return result

    async def _copy(self, work: Awaitable[object]) -> None:
        try:
            await work
        except StoreError as e:  # the copy is a cache: the call it follows has succeeded
            log.info("the local copy was not updated: %s", e)

    async def _has_chat(self, chat: Chat) -> None:
        """The chat's row in the copy, with its title as the remote has it (renamed elsewhere)."""
        try:
            held = await self.local.get_chat(chat.id)
        except ChatNotFound:
            await self.local.create_chat(chat_id=chat.id, title=chat.title, created_at=chat.created_at)
            return
        if chat.title and held.title != chat.title:
            await self.local.rename_chat(chat.id, chat.title)

    async def _copy_turns(self, chat: Chat, turns: Sequence[Turn]) -> None:
        """Turns the remote stored (with its seqs) into the copy, after any it lacks before them."""
        if not turns:
            return
        await self._has_chat(chat)
        have = (await self.local.get_chat(chat.id)).turn_count
        if turns[-1].seq and have >= turns[-1].seq:
            return  # held already: a switch back to a chat costs no write
        first = turns[0].seq or have + 1
        if have < first - 1:  # behind: another device talked in this chat
            await self.local.append_turns(chat.id, await self.remote.load_turns(chat.id, have + 1, first - 1))
        await self.local.append_turns(chat.id, turns)

    # -- chats -----------------------------------------------------------------------------

    async def create_chat(
        self,
        *,
        chat_id: str | None = None,
        title: str | None = None,
        created_at: datetime | None = None,
        turns: Sequence[Turn] = (),
    ) -> AppendResult:
        chat_id = chat_id or new_id()  # the copy's chat is the one queued

        async def copy(result: AppendResult | None) -> None:
            if result is None:
                await self.local.create_chat(chat_id=chat_id, title=title, created_at=created_at, turns=turns)
            else:
                await self._has_chat(result.chat)
                await self._copy_turns(result.chat, result.turns)

        return await self._write(
            lambda: self.remote.create_chat(chat_id=chat_id, title=title, created_at=created_at, turns=turns), copy
        )

    async def get_chat(self, chat_id: str) -> Chat:
        return await self._read(lambda: self.remote.get_chat(chat_id), lambda: self.local.get_chat(chat_id))

    async def find_chats(self, ref: str) -> list[Chat]:
        return await self._read(lambda: self.remote.find_chats(ref), lambda: self.local.find_chats(ref))

    async def list_chats(self, limit: int = 50, offset: int = 0) -> list[Chat]:
        async def copy(chats: list[Chat]) -> None:
            for chat in chats:
                await self._has_chat(chat)

        return await self._read(
            lambda: self.remote.list_chats(limit, offset), lambda: self.local.list_chats(limit, offset), copy
        )

    async def rename_chat(self, chat_id: str, title: str) -> Chat:
        return await self._write(
            lambda: self.remote.rename_chat(chat_id, title), lambda _: self.local.rename_chat(chat_id, title)
        )

    async def delete_chat(self, chat_id: str) -> None:
        await self._write(lambda: self.remote.delete_chat(chat_id), lambda _: self.local.delete_chat(chat_id))

    # -- turns -----------------------------------------------------------------------------

    async def append_turns(self, chat_id: str, turns: Sequence[Turn]) -> AppendResult:
        async def copy(result: AppendResult | None) -> None:
            if result is None:
                await self.local.append_turns(chat_id, turns)
            else:
                await self._copy_turns(result.chat, result.turns)

        return await self._write(lambda: self.remote.append_turns(chat_id, turns), copy)

    async def load_history(self, chat_id: str) -> ChatHistory:
        async def copy(history: ChatHistory) -> None:
            await self._copy_turns(history.chat, history.full_history)

        return await self._read(
            lambda: self.remote.load_history(chat_id), lambda: self.local.load_history(chat_id), copy
        )

    async def load_turns(self, chat_id: str, start: int = 1, end: int | None = None) -> list[Turn]:
        return await self._read(
            lambda: self.remote.load_turns(chat_id, start, end), lambda: self.local.load_turns(chat_id, start, end)
        )

    async def load_memory(
        self, chat_id: str, *, min_importance: float = 7.0, important_limit: int = 30
    ) -> MemorySnapshot:
        async def copy(snapshot: MemorySnapshot) -> None:
            await self._copy_turns(snapshot.chat, snapshot.tail)
            if snapshot.pins:
                await self.local.add_new_pins(snapshot.pins)

        return await self._read(
            lambda: self.remote.load_memory(chat_id, min_importance=min_importance, important_limit=important_limit),
            lambda: self.local.load_memory(chat_id, min_importance=min_importance, important_limit=important_limit),
            copy,
        )

    # -- compaction: the remote's verdict decides, the copy follows ------------------------

    async def commit_compaction(self, commit: CompactionCommit) -> Chat | None:
        async def copy(chat: Chat | None) -> object:
            if chat is None:
                return None
            local = await self.local.get_chat(commit.chat_id)
            # the copy's own version counter: the remote's check has been made
            return await self.local.commit_compaction(
                dataclasses.replace(commit, expected_version=local.compaction_version)
            )

        return await self._background(lambda: self.remote.commit_compaction(commit), copy)

    async def set_summary_text(
        self, chat_id: str, summary_text: EmbeddedText, expected_version: int, title: str | None = None
    ) -> bool:
        async def copy(done: bool) -> object:
            if not done:
                return None
            version = (await self.local.get_chat(chat_id)).compaction_version
            return await self.local.set_summary_text(chat_id, summary_text, version, title)

        return await self._background(
            lambda: self.remote.set_summary_text(chat_id, summary_text, expected_version, title), copy
        )

    # -- summaries, facts, pins ------------------------------------------------------------

    async def upsert_summary(
        self,
        chat_id: str,
        level: SummaryLevel,
        rng: MessageRange,
        embedded: EmbeddedText,
        importance: float | None = None,
    ) -> Summary:
        return await self._background(
            lambda: self.remote.upsert_summary(chat_id, level, rng, embedded, importance),
            lambda _: self.local.upsert_summary(chat_id, level, rng, embedded, importance),
        )

    async def list_summaries(self, chat_id: str, level: SummaryLevel | None = None) -> list[Summary]:
        return await self._read(
            lambda: self.remote.list_summaries(chat_id, level), lambda: self.local.list_summaries(chat_id, level)
        )

    async def upsert_facts(
        self, chat_id: str, rng: MessageRange, lines: list[str], embedded: EmbeddedText | None
    ) -> FactBlock:
        return await self._background(
            lambda: self.remote.upsert_facts(chat_id, rng, lines, embedded),
            lambda _: self.local.upsert_facts(chat_id, rng, lines, embedded),
        )

    async def list_facts(self, chat_id: str) -> list[FactBlock]:
        return await self._read(lambda: self.remote.list_facts(chat_id), lambda: self.local.list_facts(chat_id))

    async def set_fact_lines(
        self, chat_id: str, rng: MessageRange, lines: list[str], forgotten: list[str], embedded: EmbeddedText | None
    ) -> FactBlock:
        return await self._write(
            lambda: self.remote.set_fact_lines(chat_id, rng, lines, forgotten, embedded),
            lambda _: self.local.set_fact_lines(chat_id, rng, lines, forgotten, embedded),
        )

    async def add_pin(self, pin: Pin) -> Pin:
        return await self._write(lambda: self.remote.add_pin(pin), lambda stored: self.local.add_pin(stored or pin))

    async def add_new_pins(self, pins: Sequence[Pin]) -> list[Pin]:
        return await self._background(lambda: self.remote.add_new_pins(pins), lambda _: self.local.add_new_pins(pins))

    async def list_pins(self, chat_id: str, *, forgotten: bool = False) -> list[Pin]:
        return await self._read(
            lambda: self.remote.list_pins(chat_id, forgotten=forgotten),
            lambda: self.local.list_pins(chat_id, forgotten=forgotten),
            None if forgotten else self.local.add_new_pins,
        )

    async def set_pin_forgotten(self, pin_id: str, forgotten: bool) -> Pin:
        return await self._write(
            lambda: self.remote.set_pin_forgotten(pin_id, forgotten),
            lambda _: self.local.set_pin_forgotten(pin_id, forgotten),
        )

    async def delete_pin(self, pin_id: str) -> None:
        await self._write(lambda: self.remote.delete_pin(pin_id), lambda _: self.local.delete_pin(pin_id))

    # -- the user's profile -----------------------------------------------------------------

    async def save_profile(self, entries: Sequence[ProfileEntry], *, edit: bool = False) -> list[ProfileEntry]:
        return await self._write(
            lambda: self.remote.save_profile(entries, edit=edit),
            lambda stored: self.local.save_profile(stored or entries, edit=True),
        )

    async def list_profile(self, *, history: bool = False) -> list[ProfileEntry]:
        async def copy(entries: list[ProfileEntry]) -> None:
            await self._copy_profile(entries, history)

        return await self._read(
            lambda: self.remote.list_profile(history=history), lambda: self.local.list_profile(history=history), copy
        )

    async def _copy_profile(self, remote: list[ProfileEntry], history: bool) -> None:
        """The copy's profile brought to the remote's (entries added or edited on other devices, or
        found by their compactions), so a chat opened offline still knows the user. Only what
        differs is written: the profile is read for every chat's context."""
        held = {e.id: e for e in await self.local.list_profile(history=True)}
        changed = [
            e
            for e in remote
            if (h := held.get(e.id)) is None
            or (h.content, h.importance, h.subject) != (e.content, e.importance, e.subject)
        ]
        if changed:  # supersession follows, by the same rule as the remote's
            await self.local.save_profile(changed, edit=True)
        listed = {e.id: e for e in remote}
        for entry in await self.local.list_profile(history=True):
            if history:  # every entry, each with its state
                gone = entry.id in listed and listed[entry.id].forgotten_at is not None
            else:  # the current ones: one current here and not there was forgotten there
                gone = entry.current and entry.id not in listed
            if gone != (entry.forgotten_at is not None) and (gone or entry.id in listed):
                await self.local.set_profile_forgotten(entry.id, gone)

    async def set_profile_forgotten(self, entry_id: str, forgotten: bool) -> ProfileEntry:
        return await self._write(
            lambda: self.remote.set_profile_forgotten(entry_id, forgotten),
            lambda _: self.local.set_profile_forgotten(entry_id, forgotten),
        )

    # -- timers and reminders ----------------------------------------------------------------

    async def add_reminder(self, reminder: Reminder) -> Reminder:
        return await self._write(
            lambda: self.remote.add_reminder(reminder), lambda stored: self.local.add_reminder(stored or reminder)
        )

    async def list_reminders(self, *, history: bool = False) -> list[Reminder]:
        async def copy(reminders: list[Reminder]) -> None:
            for reminder in reminders:
                held = await self.local.add_reminder(reminder)
                if held.state == "pending" and reminder.state == "cancelled":
                    await self.local.cancel_reminder(reminder.id)
                elif reminder.state == "fired" and held.said_at is None and reminder.claimed_by:
                    await self._copy_claim(held, reminder.claimed_by)
                    if reminder.said_at is not None:
                        await self.local.mark_reminder_said(reminder.id, reminder.claimed_by)

        return await self._read(
            lambda: self.remote.list_reminders(history=history),
            lambda: self.local.list_reminders(history=history),
            copy,
        )

    async def _copy_claim(self, held: Reminder, device: str) -> None:
        """The copy's claim as the server has it: claimed, or taken over by another device."""
        if held.state == "pending":
            await self.local.claim_reminder(held.id, device)
        elif held.claimed_by != device:
            await self.local.reclaim_reminder(held.id, device, 0.0)

    async def cancel_reminder(self, reminder_id: str) -> Reminder:
        return await self._write(
            lambda: self.remote.cancel_reminder(reminder_id), lambda _: self.local.cancel_reminder(reminder_id)
        )

    async def claim_reminder(self, reminder_id: str, device: str) -> Reminder | None:
        """The remote's claim decides; while it is away this device claims in its copy and says the
        reminder, since a reminder said twice (here and by a device that reached the server) is
        better than one not said at all."""
        try:
            claimed = await self._reach(lambda: self.remote.claim_reminder(reminder_id, device))
        except StoreOffline:
            return await self.local.claim_reminder(reminder_id, device)
        await self._copy(self.local.claim_reminder(reminder_id, device))
        return claimed

    async def mark_reminder_said(self, reminder_id: str, device: str) -> Reminder | None:
        """Through the outbox: a reminder said while the server is away is marked in the copy at
        once (so it is not said again here) and on the server when the outbox is sent."""
        return await self._write(
            lambda: self.remote.mark_reminder_said(reminder_id, device),
            lambda _: self.local.mark_reminder_said(reminder_id, device),
        )

    async def unsaid_reminders(self, device: str, stale_s: float) -> list[Reminder]:
        return await self._read(
            lambda: self.remote.unsaid_reminders(device, stale_s), lambda: self.local.unsaid_reminders(device, stale_s)
        )

    async def reclaim_reminder(self, reminder_id: str, device: str, stale_s: float) -> Reminder | None:
        """As `claim_reminder`: the remote decides; while it is away, the copy."""
        try:
            taken = await self._reach(lambda: self.remote.reclaim_reminder(reminder_id, device, stale_s))
        except StoreOffline:
            return await self.local.reclaim_reminder(reminder_id, device, stale_s)
        if taken is not None:
            await self._copy(self.local.reclaim_reminder(reminder_id, device, 0.0))
        return taken

    # -- search ----------------------------------------------------------------------------

    async def search_chat(self, query: EmbeddedText, chat_id: str, match_count: int) -> list[TextMatch]:
        return await self._read(
            lambda: self.remote.search_chat(query, chat_id, match_count),
            lambda: self.local.search_chat(query, chat_id, match_count),
        )

    async def search(self, query: EmbeddedText, match_count: int, texts_per_chat: int = 1) -> list[ChatMatch]:
        return await self._read(
            lambda: self.remote.search(query, match_count, texts_per_chat),
            lambda: self.local.search(query, match_count, texts_per_chat),
        )

    async def window_frontier(self, chat_id: str, size: int) -> int:
        return await self.remote.window_frontier(chat_id, size)  # only an index write follows it

    async def upsert_windows(self, chat_id: str, windows: Sequence[EmbeddedWindow]) -> None:
        await self._background(
            lambda: self.remote.upsert_windows(chat_id, windows), lambda _: self.local.upsert_windows(chat_id, windows)
        )

    async def window_text(self, chat_id: str, start: int) -> str | None:
        return await self._read(
            lambda: self.remote.window_text(chat_id, start), lambda: self.local.window_text(chat_id, start)
        )

    async def word_counts(self, words: Sequence[str]) -> WordCounts:
        return await self._read(lambda: self.remote.word_counts(words), lambda: self.local.word_counts(words))

    async def search_words(self, words: Sequence[str], match_count: int, chat_id: str | None = None) -> list[TurnMatch]:
        return await self._read(
            lambda: self.remote.search_words(words, match_count, chat_id),
            lambda: self.local.search_words(words, match_count, chat_id),
        )

    async def embedder_info(self) -> tuple[str, int] | None:
        return await self._read(self.remote.embedder_info, self.local.embedder_info)

    async def stats(self, chat_id: str | None = None) -> MemoryStats:
        return await self._read(lambda: self.remote.stats(chat_id), lambda: self.local.stats(chat_id))

    # -- the remote's own ------------------------------------------------------------------

    async def flush(self) -> int:
        return await self._reach(self.remote.flush)

    async def pending_writes(self) -> PendingWrites:
        return dataclasses.replace(await self.remote.pending_writes(), offline=self.offline)

    async def schema_version(self) -> int | None:
        return await self.remote.schema_version()

    # -- chats waiting for summaries: Supabase's queue, which any of the user's devices works; a
    # device that cannot reach it summarises nothing meanwhile (the summaries go there too)

    async def queue_summaries(self, chat_ids: Sequence[str]) -> None:
        await self.remote.queue_summaries(chat_ids)

    async def take_summary(self, lease_s: float) -> str | None:
        return await self.remote.take_summary(lease_s)

    async def settle_summary(self, chat_id: str, retry_in_s: float | None = None, error: str | None = None) -> None:
        await self.remote.settle_summary(chat_id, retry_in_s, error)

    async def summary_queue(self) -> QueueState:
        return await self.remote.summary_queue()

    async def embedded_texts(self) -> list[StoredText]:
        return await self.remote.embedded_texts()

    async def replace_embeddings(self, items: Sequence[tuple[TextRef, np.ndarray]], embedder: str) -> None:
        await self.remote.replace_embeddings(items, embedder)
        await self._copy(self.local.replace_embeddings(items, embedder))


def _as_chat_store(store: LocalCopyStore) -> ChatStore:
    return store  # mypy checks here that the copy answers every call of the protocol
