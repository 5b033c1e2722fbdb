"""Memory's errors: the stores', the models', an import's and a reminder's time, all
`ParlaError`s (`parla.kernel.errors`)."""

from __future__ import annotations

from parla.kernel.errors import ParlaError


class StoreError(ParlaError):
    """A store operation failed; the message says what and what to do."""


class ChatNotFound(StoreError):
    def __init__(self, chat_ref: str) -> None:
        # an id is matched by its start from 4 characters on, so "9" names no chat even when one's id starts so
        short = " (an id is matched by its first 4 or more characters)" if 0 < len(chat_ref.strip()) < 4 else ""
        super().__init__(f"no chat matches {chat_ref!r}{short}: `parla chats` lists them")


class TurnConflict(StoreError):
    """A turn id is already stored in another chat."""


class EmbedderMismatch(StoreError):
    """Vectors of another embedder or dimension are already stored."""


class Reembedding(StoreError):
    """The store's vectors are being rebuilt for the configured embedder: until that is done a
    vector of the new embedder can neither be searched with nor stored."""


class StoreOffline(StoreError):
    """The remote store cannot be reached. Turns being written are safe in the local outbox."""


class WriteQueued(StoreOffline):
    """The remote store is away and the write is kept in the local outbox (and the local copy):
    it reaches the server, in order, when it answers again. What the user asked for is done here."""


class StoreFileReplaced(StoreError):
    """The SQLite file, or its -wal or -shm file, was deleted or replaced under the open store."""


class ForeignFile(StoreError):
    """A file Parla would read its data from (a store, an outbox, the local copy, a session) or its
    folder belongs to another user, who chooses what it holds: it is not used."""


class StoreRefused(StoreError):
    """The server refused a request for good (bad input): retrying the same request cannot help."""


class ModelError(ParlaError):
    """A model call (embedding or summarising) failed after the adapter's retries."""


class ModelUnavailable(ModelError):
    """The model cannot be used now: unreachable (offline, timeouts, overloaded after the retries)
    or the key was refused. Retrying at once cannot help; work may go to an offline model."""


class RateLimited(ModelUnavailable):
    """The API answered 429: a rate limit or quota is used up. `retry_after_s` is when it says to
    try again (its Retry-After header, or the RetryInfo delay of its error), None when it does not."""

    def __init__(self, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class EmptyRequest(ParlaError):
    """A search was asked for nothing."""

    def __init__(self) -> None:
        super().__init__("say what the chat was about: the search request is empty")


class ImportLineError(ParlaError):
    """One line (of a JSONL file) or conversation (of an export) could not be imported; says which
    and why."""

    def __init__(self, line_no: int, reason: str, what: str = "line") -> None:
        super().__init__(f"{what} {line_no}: {reason}")
        self.line_no = line_no
        self.reason = reason
        self.what = what


class ImportFormatError(ParlaError):
    """The file is in no format `parla import` reads, or stops being valid JSON partway."""


class UnreadableTime(ParlaError):
    """A reminder's time reads as no moment, or as one already past; says how to put it."""
