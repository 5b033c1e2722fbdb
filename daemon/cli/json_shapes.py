"""What each command's `--json` prints, as pydantic models. `emit_json` checks every document
against its command's shape before printing it, and the reference (docs/reference/protocol.md,
`python -m parla.daemon.docs`) is generated from SHAPES: a field a command prints is a field the
reference names, or the command fails its tests. Times are ISO 8601 strings with their offset."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, TypeAdapter

from parla.records.pins import Pin
from parla.records.stats import MemoryStats

from ..settings import StoreName

if TYPE_CHECKING:  # it loads numpy: `_store_stats` resolves it for `parla stats`, which has loaded it
    from parla.memory.store.sqlite.size import StoreSize


class Shape(BaseModel):
    # built when a command checks its document against it: one command uses one or two of these
    model_config = ConfigDict(extra="forbid", defer_build=True)


class ChatRow(Shape):
    id: str
    title: str | None
    created_at: str
    last_activity_at: str
    turns: int
    assistant_turns: int = Field(description="turns the model sees: the summary turn and the tail")
    summarized_through: int = Field(description="turns folded into the rolling summary")


class ImportLine(Shape):
    """An entry of the import report: `line` for a JSONL file, `conversation` (its number) for an export."""

    line: int | None = None
    conversation: int | None = None
    chat_id: str | None = None
    detail: str | None = Field(None, description="`differs`: how the stored chat differs")
    note: str | None = Field(None, description="`notes`: what was changed on the way in")
    reason: str | None = Field(None, description="`skipped`: why")


class ImportSummaries(Shape):
    """How the imported chats get their summaries: made here (`done`), in the daemon's background
    queue (`queued`), or not yet because the user did not agree to Gemini's cost (`not queued`)."""

    by: str = Field(description="`offline` or the Gemini summary model")
    state: Literal["done", "queued", "not queued"]
    chats: int | None = Field(None, description="chats that need summaries (Gemini)")
    calls: int | None = Field(None, description="Gemini calls they take, estimated")
    tokens: int | None = Field(None, description="input tokens they take, estimated")


class ImportReport(Shape):
    format: str = Field(description="the format told from the content")
    imported: int
    added_to: int = Field(description="stored chats that gained turns")
    replaced: int
    unchanged: int
    turns_added: int
    profile_entries: int = Field(description="what the user said about themselves, added to the profile")
    differs: list[ImportLine] = Field(description="chats whose stored turns differ (kept unless `--replace`)")
    notes: list[ImportLine]
    skipped: list[ImportLine]
    not_summarised: list[str] = Field(description="chat ids left unsummarised; importing again finishes them")
    summaries: ImportSummaries


class TurnShape(Shape):
    role: Literal["user", "model"]
    parts: list[dict[str, str]] = Field(description='`[{"text": ...}]`')
    thinking: str | None = None
    id: str
    seq: int
    created_at: str
    interrupted: bool
    source: str
    model_variant: str | None
    sources: list[dict[str, str]] = Field(
        description='the pages a look-up\'s answer came from: `[{"title": ..., "uri": ...}]`'
    )


class ShownChat(Shape):
    id: str
    title: str | None
    created_at: str
    last_activity_at: str
    summary_text: str | None
    summarized_through: int


class SummaryRow(Shape):
    level: int = Field(description="0: a chunk summary, 1: a meta summary")
    range: str = Field(description="turns `A-B`")
    text: str
    importance: float | None
    updated_at: str


class FactRow(Shape):
    range: str
    lines: list[str]


class Tokens(Shape):
    full_history: int
    assistant_history: int
    context: int
    budget: int
    sections: dict[str, int]


class DroppedRow(Shape):
    section: str
    label: str
    tokens: int
    reason: str


class ContextItem(Shape):
    section: str
    text: str
    source: str | None = Field(description="the turn or turns it comes from")


class ShowReport(Shape):
    chat: ShownChat
    full_history: list[TurnShape]
    assistant_history: list[TurnShape]
    summaries: list[SummaryRow]
    facts: list[FactRow]
    pins: list[Pin]
    tokens: Tokens
    dropped: list[DroppedRow] = Field(description="what the context budget left out")
    context: list[ContextItem] = Field(description="what the model gets before the recent turns")


class RecallRow(Shape):
    chat_id: str
    title: str | None
    kind: str = Field(
        description="`turn` or `turns` (what was said), `title`, `summary_text` (the description), `chunk` or "
        "`meta` (a chunk or meta summary), `facts`, `pin`"
    )
    turns: str | None = Field(
        description="`41` or `41-50`; none for the title, the description or a pin not yet placed"
    )
    said_at: str | None
    text: str


class ProfileRow(Shape):
    number: int | None = Field(description="its number in `parla profile list` (none with `--all`)")
    id: str
    text: str
    importance: float
    about: str | None
    origin: str
    state: Literal["current", "superseded", "forgotten"]
    chat_id: str | None
    turn: int | None
    said_at: str | None
    superseded_by: str | None


class ForgottenRow(Shape):
    number: int
    kind: str
    text: str
    forgotten_at: str | None


class BackfillCounts(Shape):
    chats: int
    described: int
    turns_folded: int
    chunk_summaries: int
    fact_blocks: int
    meta_summaries: int
    profile_entries: int = Field(description="what the user said about themselves, added to the profile")
    failed: dict[str, str] = Field(description="chat id → why it failed")


class StoreStats(MemoryStats):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    store: StoreName
    path: str | None = Field(None, description="the SQLite file")
    url: str | None = Field(None, description="the Supabase project")
    chat: str | None = Field(None, description="with `--chat`: the chat's id")
    store_size: StoreSize | None = Field(None, description="SQLite, without `--chat`: what takes the file's bytes")


class NotRunning(Shape):
    """No daemon answers; the command exits 1."""

    running: Literal[False]


class ReminderRow(Shape):
    number: int | None = Field(description="the number `parla reminders cancel` takes; null once said or cancelled")
    id: str
    kind: Literal["timer", "reminder"]
    text: str
    due_at: str
    due_local: str = Field(
        description="the due time in your zone (`local_zone`), with the zone's abbreviation: Mon 2026-11-30 17:00:00 CET"
    )
    local_zone: str = Field(description="the zone `due_local` is in: PARLA_TIME_ZONE, or the system's")
    time_zone: str = Field(description="the zone the reminder was set in")
    state: Literal["pending", "fired", "cancelled"]
    chat_id: str | None = Field(description="the chat it was set in")
    device: str | None = Field(description="the device it was set on")
    claimed_by: str | None = Field(description="the device that claimed it, to say it")
    said_by: str | None = Field(description="the device that said it to its end")
    said_at: str | None = Field(description="when its saying finished; null while claimed and cut off")


class LiveStep(Shape):
    name: str
    ok: bool
    detail: str


class LiveCheck(Shape):
    """`parla doctor --live`: each step of the short real session, and the trace file written."""

    steps: list[LiveStep]
    trace: str


class ConfigRow(Shape):
    value: JsonValue = Field(description="the value in effect, secrets masked")
    source: Literal["default", "file", ".env", "environment", "command line"]
    where: str | None = Field(None, description="the file and line, or the variable")


class DeviceRow(Shape):
    index: int
    name: str
    inputs: int
    outputs: int
    default_rate: float
    used_for: list[Literal["input", "output"]]


class Check(Shape):
    name: str
    outcome: Literal["ok", "warn", "fail"]
    detail: str
    fix: str


class DbCheck(Shape):
    url: str | None
    schema_version: int
    expected: int
    chats: int
    outbox_depth: int


class OutboxHere(Shape):
    project: str = Field(description="the Supabase project Parla uses now (its URL)")
    waiting: int
    refused: int = Field(description="refused by the server for good, kept")


class OutboxElsewhere(Shape):
    project: str = Field(description="the URL of a project Parla used before")
    user: str = Field(description='the user id of the service-role mode, or "session" (`parla login`)')
    waiting: int
    refused: int


class OutboxList(Shape):
    current: OutboxHere | None = Field(description="null when PARLA_STORE is not supabase")
    elsewhere: list[OutboxElsewhere]


class SyncReport(Shape):
    copied: int
    unchanged: int
    turns_added: int
    profile_entries_added: int
    not_summarised: list[str]


def _store_stats() -> type[StoreStats]:
    from parla.memory.store.sqlite.size import StoreSize

    StoreStats.model_rebuild(_types_namespace={"StoreSize": StoreSize})
    return StoreStats


@cache
def _status() -> Any:
    # imported here: the control protocol's two dozen models (and the search result's) cost a `--json`
    # command that prints no status about a twentieth of what any typer + pydantic-settings program
    # takes to start (instructions counted under valgrind)
    from ..protocol import StatusAnswer

    class Running(StatusAnswer):
        """The daemon's status (the control socket's answer) with `running: true`."""

        running: Literal[True]

    return Running | NotRunning


def _search_result() -> Any:
    from parla.records.search_result import SearchResult

    return SearchResult


# Each command's `--json` document: a model, or a list or mapping of one (made when asked for: the
# model of stats needs the store's modules, which `parla stats` has loaded).
SHAPES: dict[str, Callable[[], Any]] = {
    "chats": lambda: list[ChatRow],
    "show": lambda: ShowReport,
    "search": _search_result,
    "recall": lambda: list[RecallRow],
    "import": lambda: ImportReport,
    "stats": _store_stats,
    "status": _status,
    "profile list": lambda: list[ProfileRow],
    "memory forgotten": lambda: list[ForgottenRow],
    "memory backfill": lambda: BackfillCounts,
    "config show": lambda: dict[str, ConfigRow],
    "devices": lambda: list[DeviceRow],
    "doctor": lambda: list[Check],
    "doctor --live": lambda: LiveCheck,
    "reminders list": lambda: list[ReminderRow],
    "db check": lambda: DbCheck,
    "sync": lambda: SyncReport,
    "outbox list": lambda: OutboxList,
}


def check(command: str, data: Any) -> None:
    """Raise when `data` holds a field, or a type, the command's shape does not declare."""
    TypeAdapter(SHAPES[command]()).validate_python(data)
