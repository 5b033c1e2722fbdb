"""A remote store with a local copy on this device, so the user's chats stay reachable offline.

`LocalCopyStore` composes a remote store (Supabase, whose writes wait in its outbox while it is
away) with an embedded SQLite store holding a copy of what this device wrote or read (the chats it
listed, their titles, the turns, pins and windows it stored or loaded, the summaries, facts and
vectors its compaction made) and of every chat's row, turns and pins the background fill brought.

- Online, every call goes to the remote store (its RPCs stay the path) and what it wrote or
  answered is copied into the local store on the way; a failure of the copy is logged and never
  fails the call.
- When the remote store does not answer (`StoreOffline`), reads are answered from the copy, so
  switching, listing, recalling and forgetting work. The daemon fills the copy with every chat of
  the remote in the background (`copy_fill.CopyFill`, through `fill_chat`), so chats other devices
  wrote are there too, as they were at the last fill; what was added since is missing. A write the user asks for is applied to the copy and waits in the outbox
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
from collections.abc import Sequence
from datetime import datetime

import numpy as np

from parla.records.chat import Chat, ChatHistory
from parla.records.embedding import EmbeddedText
from parla.records.pins import Pin
from parla.records.profile import ProfileEntry
from parla.records.progress import PendingWrites
from parla.records.reminder import Reminder
from parla.records.turn import Turn, new_id

from ..errors import ChatNotFound, StoreOffline
from .copy_paths import CopyPaths, background, read, remote_only, written
from .protocol import (
    AppendResult,
    ChatRecords,
    ChatStore,
    CompactionCommit,
    MemoryRecords,
    MemorySnapshot,
    ReminderRecords,
    SearchIndex,
    StoreState,
    SummaryQueue,
    TextRef,
)
from .scoring import ScoredWrites


class LocalCopyStore(ScoredWrites, CopyPaths):
    """`ChatStore` over `remote`, with `local` as this device's copy. The caller opens and closes both.

    The calls that copy what they write or read are written here; the others are declared by the
    path they take (`copy_paths`)."""

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

    async def _create_chat(
        self, chat_id: str | None, title: str | None, created_at: datetime | None, turns: list[Turn]
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

    get_chat = read(ChatRecords.get_chat)
    find_chats = read(ChatRecords.find_chats)

    async def list_chats(self, limit: int = 50, offset: int = 0) -> list[Chat]:
        async def copy(chats: list[Chat]) -> None:
            for chat in chats:
                await self._has_chat(chat)

        return await self._read(
            lambda: self.remote.list_chats(limit, offset), lambda: self.local.list_chats(limit, offset), copy
        )

    rename_chat = written(ChatRecords.rename_chat)
    delete_chat = written(ChatRecords.delete_chat)

    # -- turns -----------------------------------------------------------------------------

    async def _append_turns(self, chat_id: str, turns: list[Turn]) -> AppendResult:
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

    load_turns = read(ChatRecords.load_turns)

    async def fill_chat(self, chat: Chat, page: int) -> bool:
        """The remote's `chat` (as its listing gives it) brought into the copy, so that reads from
        the copy answer for it: its row and title, the turns the copy lacks (`page` a request, each
        page stored before the next is asked for, so a fill stopped midway resumes there), and its
        pins. False when the copy held it whole already (nothing asked of the remote)."""
        try:
            held: Chat | None = await self.local.get_chat(chat.id)
        except ChatNotFound:
            held = None
        if held is not None and held.turn_count >= chat.turn_count and held.title == (chat.title or held.title):
            return False
        await self._has_chat(chat)
        start = (await self.local.get_chat(chat.id)).turn_count + 1
        while start <= chat.turn_count:  # bounded by the listing's count, whatever the copy takes
            end = min(start + page - 1, chat.turn_count)
            await self._copy_turns(chat, await self.remote.load_turns(chat.id, start, end))
            start = end + 1
        await self.local.add_new_pins(await self.remote.list_pins(chat.id))
        return True

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

    upsert_summary = background(MemoryRecords.upsert_summary)
    list_summaries = read(MemoryRecords.list_summaries)
    upsert_facts = background(MemoryRecords.upsert_facts)
    list_facts = read(MemoryRecords.list_facts)
    set_fact_lines = written(MemoryRecords.set_fact_lines)

    async def add_pin(self, pin: Pin) -> Pin:
        return await self._write(lambda: self.remote.add_pin(pin), lambda stored: self.local.add_pin(stored or pin))

    add_new_pins = background(MemoryRecords.add_new_pins)

    async def list_pins(self, chat_id: str, *, forgotten: bool = False) -> list[Pin]:
        return await self._read(
            lambda: self.remote.list_pins(chat_id, forgotten=forgotten),
            lambda: self.local.list_pins(chat_id, forgotten=forgotten),
            None if forgotten else self.local.add_new_pins,
        )

    set_pin_forgotten = written(MemoryRecords.set_pin_forgotten)
    delete_pin = written(MemoryRecords.delete_pin)

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

    set_profile_forgotten = written(MemoryRecords.set_profile_forgotten)

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

    cancel_reminder = written(ReminderRecords.cancel_reminder)

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

    # through the outbox: a reminder said while the server is away is marked in the copy at once
    # (so it is not said again here) and on the server when the outbox is sent
    mark_reminder_said = written(ReminderRecords.mark_reminder_said)
    unsaid_reminders = read(ReminderRecords.unsaid_reminders)

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

    search_chat = read(SearchIndex.search_chat)
    search = read(SearchIndex.search)
    window_frontier = remote_only(SearchIndex.window_frontier)  # only an index write follows it
    upsert_windows = background(SearchIndex.upsert_windows)
    window_text = read(SearchIndex.window_text)
    word_counts = read(SearchIndex.word_counts)
    search_words = read(SearchIndex.search_words)
    embedder_info = read(SearchIndex.embedder_info)
    embedded_texts = remote_only(SearchIndex.embedded_texts)

    async def replace_embeddings(self, items: Sequence[tuple[TextRef, np.ndarray]], embedder: str) -> None:
        await self.remote.replace_embeddings(items, embedder)
        await self._copy(self.local.replace_embeddings(items, embedder))

    # -- the remote's own ------------------------------------------------------------------

    stats = read(StoreState.stats)

    async def flush(self) -> int:
        return await self._reach(self.remote.flush)

    async def pending_writes(self) -> PendingWrites:
        return dataclasses.replace(await self.remote.pending_writes(), offline=self.offline)

    schema_version = remote_only(StoreState.schema_version)

    # -- chats waiting for summaries: Supabase's queue, which any of the user's devices works; a
    # device that cannot reach it summarises nothing meanwhile (the summaries go there too)

    queue_summaries = remote_only(SummaryQueue.queue_summaries)
    take_summary = remote_only(SummaryQueue.take_summary)
    settle_summary = remote_only(SummaryQueue.settle_summary)
    summary_queue = remote_only(SummaryQueue.summary_queue)


def _as_chat_store(store: LocalCopyStore) -> ChatStore:
    return store  # mypy checks here that the copy answers every call of the protocol
