"""The `ChatStore` protocol every store implements (SQLite, Supabase) and its errors.

Semantics every implementation keeps:
- `append_turns` is atomic and idempotent by turn id: a turn already stored is not stored again,
  and its stored sequence number is returned.
- `commit_compaction` applies only if the chat's `compaction_version` is still the one the
  compaction read; turns that arrived meanwhile have higher sequence numbers and stay in the tail.
- Summaries and facts are upserted per (chat, level, range), so regenerating a range replaces it.
- Each turn is stored with its importance (memory.language.importance's rules unless it has one;
  scored once where the writes come in, `scoring.ScoredWrites`).
- `add_new_pins` never overwrites: a pin id already stored (an auto pin edited or forgotten by the
  user) keeps its row.
- Forgetting is soft: a forgotten pin or fact line leaves every listing the prompt is built from
  but stays stored until restored.
- The profile is the user's, across chats: saving an entry with a subject supersedes, in the same
  transaction, the current entries of that subject said before it (and is itself stored superseded
  when a current one was said after it); superseded and forgotten entries stay as history.
- A reminder's state moves once, pending to fired or to cancelled: `claim_reminder` is atomic, so
  of several devices claiming one reminder exactly one gets it (and says it). Fired is claimed, not
  heard: the claimer marks it said (`mark_reminder_said`) once its saying finished. Until then it is
  among the `unsaid_reminders` (its saying was cut off by a stop, a kill or a power loss): its
  claimer's at once, any device's once the claim is stale; `reclaim_reminder` is atomic too, so
  exactly one device says it again. The mark is written once: a said reminder stays said.
- Every embedding is written with its text and its embedder; vectors of another embedder or
  dimension are refused (`EmbedderMismatch`) until `replace_embeddings` rebuilds them all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Literal, Protocol

from parla.records.chat import Chat, ChatHistory
from parla.records.facts import FactBlock, format_fact_lines
from parla.records.pins import Pin
from parla.records.profile import ProfileEntry
from parla.records.progress import PendingWrites
from parla.records.reminder import Reminder
from parla.records.stats import MemoryStats
from parla.records.summary import Summary, SummaryLevel
from parla.records.turn import MessageRange, Turn

from ..errors import StoreError
from ..language.text import window_words

if TYPE_CHECKING:  # the commands that only read chats load neither numpy nor the embedders
    import numpy as np

    from parla.records.embedding import EmbeddedText

TextKind = Literal["summary_text", "chunk", "meta", "facts", "turns"]


@dataclass(frozen=True)
class TextRef:
    """Where an embedded text lives: the chat's summary text, a summary or facts range, or a
    window of raw turns ("turns")."""

    chat_id: str
    kind: TextKind
    range: MessageRange | None = None

    @property
    def shown_kind(self) -> str:
        """The kind a search reports: the window before the first turn holds the chat's title
        (`parla.memory.retrieval.turn_windows`)."""
        return "title" if self.kind == "turns" and self.range is not None and self.range.start == 0 else self.kind


@dataclass(frozen=True)
class StoredText:
    ref: TextRef
    text: str


@dataclass(frozen=True)
class TextMatch:
    ref: TextRef
    text: str
    similarity: float


@dataclass(frozen=True)
class ChatMatch:
    """A chat's best-matching embedded texts for a query, best first (what `search_chats_semantic`
    returns, grouped by chat)."""

    chat_id: str
    title: str | None
    created_at: datetime
    last_activity_at: datetime
    texts: tuple[TextMatch, ...]

    @property
    def similarity(self) -> float:
        return self.texts[0].similarity


@dataclass(frozen=True)
class EmbeddedWindow:
    """A window of a chat's raw turns with its embedding (see `parla.memory.retrieval.turn_windows`)."""

    range: MessageRange
    embedded: EmbeddedText

    @property
    def words(self) -> list[str]:
        return window_words(self.embedded.text)


@dataclass(frozen=True)
class WordCounts:
    """In how many of the user's indexed windows each word occurs, out of `windows`."""

    windows: int
    counts: dict[str, int]


@dataclass(frozen=True)
class TurnMatch:
    """A turn whose words match a recall request (what `search_words` returns); `score` is
    bm25's, higher is better."""

    chat_id: str
    title: str | None
    seq: int
    role: str
    text: str
    score: float
    last_activity_at: datetime


@dataclass(frozen=True)
class AppendResult:
    chat: Chat
    turns: list[Turn]
    added: int


@dataclass(frozen=True)
class CompactionCommit:
    chat_id: str
    expected_version: int
    summarized_through: int
    rolling_summary: str
    summary_text: EmbeddedText
    title: str | None = None  # generated: applied as in `set_summary_text`


def facts_text(lines: list[str], embedded: EmbeddedText | None) -> str:
    """The stored text of fact lines, once their embedding is checked to be of exactly that text."""
    text = format_fact_lines(lines)
    if lines and (embedded is None or embedded.text != text):
        raise StoreError("facts with lines need the embedding of exactly their text")
    return text


@dataclass(frozen=True)
class MemorySnapshot:
    """What a chat's memory context is built from, read together."""

    chat: Chat
    tail: list[Turn]
    pins: list[Pin]
    metas: list[Summary]
    facts: list[FactBlock]
    # summarised turns of at least the asked importance, most important first (newest first among equals)
    important: list[Turn]


class ChatRecords(Protocol):
    """Chats and their turns, and the commit of a compaction."""

    async def create_chat(
        self,
        *,
        chat_id: str | None = None,
        title: str | None = None,
        created_at: datetime | None = None,
        turns: Sequence[Turn] = (),
    ) -> AppendResult:
        """Create a chat with its first turns in one transaction; an existing id appends
        idempotently instead (so an import can be repeated)."""
        ...

    async def get_chat(self, chat_id: str) -> Chat: ...

    async def find_chats(self, ref: str) -> list[Chat]: ...

    async def list_chats(self, limit: int = 50, offset: int = 0) -> list[Chat]: ...

    async def rename_chat(self, chat_id: str, title: str) -> Chat: ...

    async def delete_chat(self, chat_id: str) -> None: ...

    async def append_turns(self, chat_id: str, turns: Sequence[Turn]) -> AppendResult: ...

    async def load_history(self, chat_id: str) -> ChatHistory: ...

    async def load_turns(self, chat_id: str, start: int = 1, end: int | None = None) -> list[Turn]: ...

    async def load_memory(
        self, chat_id: str, *, min_importance: float = 7.0, important_limit: int = 30
    ) -> MemorySnapshot:
        """The chat, its unsummarised tail, pins (not forgotten), meta summaries, facts and up to
        `important_limit` summarised turns of importance `min_importance` or more: one round trip
        on a remote store, so seeding a session (and a switch) costs one request."""
        ...

    async def commit_compaction(self, commit: CompactionCommit) -> Chat | None:
        """The updated chat, or None when another compaction committed first."""
        ...

    async def set_summary_text(
        self, chat_id: str, summary_text: EmbeddedText, expected_version: int, title: str | None = None
    ) -> bool:
        """Set a chat's summary text (its search text + vector) unless a compaction committed since
        `expected_version`; `title` (generated) replaces no title or a generated one, never a
        title the user gave (at creation or by renaming)."""
        ...


class MemoryRecords(Protocol):
    """What is kept of the chats beside their turns: summaries, facts, pins, and the user's profile across chats."""

    async def upsert_summary(
        self,
        chat_id: str,
        level: SummaryLevel,
        rng: MessageRange,
        embedded: EmbeddedText,
        importance: float | None = None,
    ) -> Summary: ...

    async def list_summaries(self, chat_id: str, level: SummaryLevel | None = None) -> list[Summary]: ...

    async def upsert_facts(
        self, chat_id: str, rng: MessageRange, lines: list[str], embedded: EmbeddedText | None
    ) -> FactBlock: ...

    async def list_facts(self, chat_id: str) -> list[FactBlock]: ...

    async def set_fact_lines(
        self, chat_id: str, rng: MessageRange, lines: list[str], forgotten: list[str], embedded: EmbeddedText | None
    ) -> FactBlock:
        """Rewrite an existing range's lines and forgotten lines (forget or restore a fact);
        `upsert_facts` leaves the forgotten lines as they are."""
        ...

    async def add_pin(self, pin: Pin) -> Pin:
        """Pin, or edit the pin of that id (content, importance, type; its source stays unless given)."""
        ...

    async def add_new_pins(self, pins: Sequence[Pin]) -> list[Pin]:
        """Pin those whose id is not stored yet (an edited or forgotten pin stays as it is); the ones added."""
        ...

    async def list_pins(self, chat_id: str, *, forgotten: bool = False) -> list[Pin]:
        """The chat's pins, most important first; with `forgotten`, the forgotten ones instead."""
        ...

    async def set_pin_forgotten(self, pin_id: str, forgotten: bool) -> Pin: ...

    async def delete_pin(self, pin_id: str) -> None: ...

    async def save_profile(self, entries: Sequence[ProfileEntry], *, edit: bool = False) -> list[ProfileEntry]:
        """Store profile entries; an id already stored is edited (content, importance, subject)
        with `edit`, else left as it is. The entries written, as stored (superseded or not)."""
        ...

    async def list_profile(self, *, history: bool = False) -> list[ProfileEntry]:
        """The current profile entries, most important first (newest first among equals); with
        `history`, every entry stored, superseded and forgotten ones too, newest first."""
        ...

    async def set_profile_forgotten(self, entry_id: str, forgotten: bool) -> ProfileEntry: ...


class SearchIndex(Protocol):
    """The embedded texts, windows of what was said and their words, and the searches over them."""

    async def search(self, query: EmbeddedText, match_count: int, texts_per_chat: int = 1) -> list[ChatMatch]:
        """The `match_count` chats with the most similar embedded text, most similar first, each
        with its `texts_per_chat` most similar texts; ties go to the latest activity, then the chat
        id. The query must come from the embedder that made the store's vectors."""
        ...

    async def search_chat(self, query: EmbeddedText, chat_id: str, match_count: int) -> list[TextMatch]:
        """The `match_count` embedded texts of one chat most similar to the query (windows of what
        was said, summaries, facts, its description), most similar first."""
        ...

    async def window_frontier(self, chat_id: str, size: int) -> int:
        """The first turn whose window of `size` turns is not stored whole yet (1 when none is)."""
        ...

    async def window_text(self, chat_id: str, start: int) -> str | None:
        """The text of the chat's window starting at `start` (0: its indexed title), None if none."""
        ...

    async def upsert_windows(self, chat_id: str, windows: Sequence[EmbeddedWindow]) -> None:
        """Store windows by their first turn (replacing a shorter one) and count their words, in
        one transaction."""
        ...

    async def word_counts(self, words: Sequence[str]) -> WordCounts: ...

    async def search_words(self, words: Sequence[str], match_count: int, chat_id: str | None = None) -> list[TurnMatch]:
        """The turns (of `chat_id`, else of every chat) that hold the most telling of `words`
        (from `query_words`), best first by bm25 over the turns searched. A word in more than half
        of those turns tells nothing (its idf is nil), so a turn matching only such words is not
        returned."""
        ...

    async def embedder_info(self) -> tuple[str, int] | None:
        """The embedder name and dimension of the stored vectors, None before the first."""
        ...

    async def embedded_texts(self) -> list[StoredText]: ...

    async def replace_embeddings(self, items: Sequence[tuple[TextRef, np.ndarray]], embedder: str) -> None: ...


class ReminderRecords(Protocol):
    """Timers and reminders (parla.records.reminder), the user's across chats."""

    async def add_reminder(self, reminder: Reminder) -> Reminder:
        """Store a pending reminder; an id already stored is left as it is (and returned)."""
        ...

    async def list_reminders(self, *, history: bool = False) -> list[Reminder]:
        """The pending reminders, soonest first; with `history`, every one stored, newest due first."""
        ...

    async def cancel_reminder(self, reminder_id: str) -> Reminder:
        """Cancel a pending reminder; one fired or cancelled already is returned as it is."""
        ...

    async def claim_reminder(self, reminder_id: str, device: str) -> Reminder | None:
        """Mark a pending reminder fired by `device`, atomically: the reminder as claimed, or None
        when it is no longer pending (another device claimed it, or it was cancelled)."""
        ...

    async def mark_reminder_said(self, reminder_id: str, device: str) -> Reminder | None:
        """Record that `device` said the reminder to its end (`said_at`; kept when marked already).
        One still pending (claimed in this device's local copy while the server was away) is
        claimed and marked in one step. None when another device holds the claim, it was
        cancelled, or no reminder has that id."""
        ...

    async def unsaid_reminders(self, device: str, stale_s: float) -> list[Reminder]:
        """The reminders claimed and never marked said (their saying was cut off) that `device`
        may say again, soonest due first: those it claimed, and those another device claimed
        `stale_s` or more ago (by the store's clock)."""
        ...

    async def reclaim_reminder(self, reminder_id: str, device: str, stale_s: float) -> Reminder | None:
        """Claim again for `device`, atomically, a reminder claimed and never marked said: one it
        claimed itself (the claim's time renewed, so no other device takes it meanwhile), or one
        another device claimed `stale_s` or more ago. None when it was said meanwhile or another
        device holds a fresh claim."""
        ...


@dataclass(frozen=True)
class QueueState:
    """The queue of chats waiting for their summaries: how many, when the next is due (None: none
    waits), and the last error a postponed one met."""

    waiting: int = 0
    next_due_in_s: float | None = None
    last_error: str | None = None


class SummaryQueue(Protocol):
    """Chats waiting for their summaries (memory.compaction.summary_queue): kept in the store, so the work
    survives a restart, and handed out with a lease, so two workers never take the same chat and
    a worker that dies leaves it due again when the lease ends."""

    async def queue_summaries(self, chat_ids: Sequence[str]) -> None:
        """Queue these chats (in this order, after those already waiting); a chat already queued
        keeps its place; an unknown id is ignored."""
        ...

    async def take_summary(self, lease_s: float) -> str | None:
        """The chat due first, now leased for `lease_s` seconds; None when none is due."""
        ...

    async def settle_summary(self, chat_id: str, retry_in_s: float | None = None, error: str | None = None) -> None:
        """Done (`retry_in_s` None: it leaves the queue), or due again in `retry_in_s` seconds, with why."""
        ...

    async def summary_queue(self) -> QueueState: ...


class StoreState(Protocol):
    """The store as a whole: its figures, the writes still queued, its schema."""

    async def stats(self, chat_id: str | None = None) -> MemoryStats:
        """The whole store's figures, or one chat's."""
        ...

    async def flush(self) -> int:
        """Send the writes still queued for the server, in order; how many were sent. A store that
        writes through sends nothing."""
        ...

    async def pending_writes(self) -> PendingWrites: ...

    async def schema_version(self) -> int | None:
        """The version of a schema someone else applies (a remote project's migrations), None for
        a store that creates its own schema."""
        ...


class ChatStore(ChatRecords, MemoryRecords, SearchIndex, ReminderRecords, SummaryQueue, StoreState, Protocol):
    """What both stores (SQLite and Supabase) and the Supabase store's local copy answer, by
    concern; a part asks for the concerns it uses: one role above, or one of these pairs."""


class IndexedChats(ChatRecords, SearchIndex, Protocol):
    """Chats and their search index: what chat search and the window index read and write."""


class ChatsWithMemory(ChatRecords, MemoryRecords, Protocol):
    """Chats and what is kept of them: what a chat's memory context is read from, what a copy of a chat takes."""
