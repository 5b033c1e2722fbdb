"""The checks and mappings both stores make the same way, written once so they cannot drift."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from parla.records.turn import MessageRange, Turn

from ..errors import EmbedderMismatch, StoreError, StoreRefused
from .protocol import ChatMatch, TextKind, TextRef, TurnMatch

if TYPE_CHECKING:
    import numpy as np

T = TypeVar("T")


# An id prefix must have this many characters to name a chat: fewer would match too many.
MIN_ID_PREFIX = 4


def id_prefix_pattern(ref: str) -> str | None:
    """A LIKE pattern (escape character `\\`) for the ids that start with `ref`, or None when `ref`
    is too short to be a prefix. `%` and `_` are matched as themselves, so "%%%%" names no chat."""
    if len(ref) < MIN_ID_PREFIX:
        return None
    return ref.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def check_unique_turn_ids(turns: Sequence[Turn]) -> None:
    """One append stores each turn once: a repeated id in the same call is a caller's mistake."""
    ids = [t.id for t in turns]
    if len(set(ids)) != len(ids):
        raise StoreError("the same turn id appears twice in one append")


def check_one_dimension(items: Sequence[tuple[TextRef, np.ndarray]]) -> int | None:
    """The one dimension of a re-embedding's vectors (None for none): two would leave the store
    holding two kinds."""
    dims = {int(v.shape[0]) for _, v in items}
    if len(dims) > 1:
        raise EmbedderMismatch(f"vectors of several dimensions given: {sorted(dims)}")
    return dims.pop() if dims else None


def text_ref(chat_id: str, kind: TextKind, start: int, end: int) -> TextRef:
    """The reference of a stored text: the chat's summary text has no range, the others do."""
    return TextRef(chat_id, kind, None if kind == "summary_text" else MessageRange(start=start, end=end))


def telling_words(words: Sequence[str], doc_counts: dict[str, int], total: int) -> list[str]:
    """The words a keyword search looks for: those in some turn but in fewer than half of all
    `total` turns. Bm25's idf, log((N - n + 0.5) / (n + 0.5)), is nil or below from half on, and
    a turn that matched only such words would rank as high as a real match once fused by rank."""
    return [w for w in words if 0 < doc_counts.get(w, 0) and 2 * doc_counts[w] < total]


def turn_match(row: Any) -> TurnMatch:
    """A row of a word search (chat_id, title, seq, role, body, score, last_activity_at) as both
    stores return it."""
    return TurnMatch(
        chat_id=row["chat_id"],
        title=row["title"],
        seq=row["seq"],
        role=row["role"],
        text=row["body"],
        score=float(row["score"]),
        last_activity_at=datetime.fromisoformat(row["last_activity_at"]),
    )


def pin_not_found(pin_id: str) -> StoreError:
    # for good: a queued forget of a pin deleted elsewhere must not block the writes after it
    return StoreRefused(f"no pin with id {pin_id!r}")


def profile_entry_not_found(entry_id: str) -> StoreError:
    return StoreError(f"no profile entry with id {entry_id!r}")


def reminder_not_found(reminder_id: str) -> StoreError:
    # for good, as a pin's: a queued cancel of a reminder gone elsewhere must not block the writes after it
    return StoreRefused(f"no reminder with id {reminder_id!r}")


def exact_id_first(found: list[T], ref: str, id_of: Callable[[T], str]) -> list[T]:
    """What `find_chats` returns: the chat whose id is `ref` (ids compare in any case) alone, else
    every chat found (by id prefix or title)."""
    wanted = ref.strip().lower()
    return [f for f in found if id_of(f).lower() == wanted] or found


def ranked_matches(matches: list[ChatMatch]) -> list[ChatMatch]:
    """The order `search` returns: most similar first, then the latest activity, then the chat id."""
    return sorted(matches, key=lambda m: (-m.similarity, -m.last_activity_at.timestamp(), m.chat_id))
