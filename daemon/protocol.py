"""The control socket's messages as pydantic models. The daemon reads every request through its
model and sends every answer through one (daemon/commands.py), and the protocol's reference is
generated from them (`python -m parla.daemon.docs`), so no field can be sent that the reference
does not name. Answers forbid fields they do not declare: a new field fails the tests until it is
declared here, and with it documented."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PlainValidator, ValidationError, WithJsonSchema

from parla.records.progress import CopyFillProgress, PendingWrites, ReembedProgress
from parla.records.search_result import SearchResult

from .start_chat import Why


def _string(value: Any) -> str:
    if isinstance(value, str):
        return value
    raise ValueError("not a string")  # pydantic reports a ValueError as the field's error


def _text(value: Any) -> str:
    if not _string(value).strip():
        raise ValueError("empty")
    return str(value).strip()


# Checked in Python, not by pydantic-core, which refuses a lone surrogate: the store repairs those
# (and says so), as it does for every text it is given.
String = Annotated[str, PlainValidator(_string), WithJsonSchema({"type": "string"})]
Text = Annotated[str, PlainValidator(_text), WithJsonSchema({"type": "string", "minLength": 1})]
Seconds = Annotated[float, Field(ge=0, strict=True)]


# defer_build: a model's validator is built when it first reads or answers, so a client that
# imports these (`parla status --json` checks its document against StatusAnswer) builds only the
# ones it uses, not the whole protocol (bench/cli_startup.py)


class Request(BaseModel):
    # `cmd` names the model; anything else a newer client sends is ignored, as before
    model_config = ConfigDict(extra="ignore", defer_build=True)


class StatusRequest(Request):
    """The daemon's state: idle or active, the current chat, the outbox, the last error."""


class SwitchRequest(Request):
    """Move to a chat: by id, id start (4+ characters), exact title or imported id, else by what it was about."""

    query: Text = Field(description="a non-empty string: the chat's id or title, or what it was about")


class NewRequest(Request):
    """Start a new chat; the one left is summarised in the background."""

    title: String | None = Field(None, description="a string: the new chat's title")


class TalkRequest(Request):
    """Open a session now (push-to-talk, or without the wake phrase)."""

    wait: Seconds = Field(
        0, description="a number of seconds to wait for the session to open; 0 answers at once (`activating`)"
    )


class SayRequest(Request):
    """A typed turn in the current chat, answered by voice; opens a session if needed."""

    text: Text = Field(description="a non-empty string: what the user says")
    wait: Seconds = Field(
        0, description="a number of seconds to wait for the answer; 0 answers at once (`sent` or `activating`)"
    )


class SearchRequest(Request):
    """Which chat a request means and why, by the daemon's warm embedder and index; nothing moves."""

    query: Text = Field(description="a non-empty string: the request, as it would be said")
    limit: Annotated[int, Field(ge=1, le=50, strict=True)] = Field(5, description="an integer from 1 to 50: candidates")


class RemindersRequest(Request):
    """Reminders were set or cancelled elsewhere on this machine (`parla reminders`): read them again."""


class SummariesRequest(Request):
    """Chats were queued for their summaries elsewhere on this machine (`parla import`): look at the queue now."""


class UiRequest(Request):
    """The memory inspector's address."""


class MuteRequest(Request):
    """Stop hearing the microphone: no wake phrase, nothing sent."""


class UnmuteRequest(Request):
    """Hear the microphone again."""


class StopRequest(Request):
    """Stop the daemon (served even when every place on the socket is taken)."""


class Answer(BaseModel):
    # what the daemon may send is exactly what is declared (and so documented)
    model_config = ConfigDict(extra="forbid", defer_build=True)


class ChatRef(Answer):
    id: str
    title: str | None
    why: Why = Field(
        description="how the user came to it: `talked` (where they last talked with Parla), `chose` (the chat they "
        "last switched to or started), `asked` (named at start: `parla run --chat`, `--new`), `first` (a new chat: "
        "they have not talked with Parla yet)"
    )


class LatencyFigures(Answer):
    """Voice to voice (end of the user's speech at the microphone to the answer's first sound), in ms:
    the whole time and Parla's and the service's parts; null with no timed turn."""

    turns: int
    total_p50_ms: float | None
    total_p95_ms: float | None
    parla_p50_ms: float | None
    parla_p95_ms: float | None
    service_p50_ms: float | None
    service_p95_ms: float | None


class VoiceToVoice(Answer):
    session: LatencyFigures = Field(description="the open (or last) session's turns")
    day: LatencyFigures = Field(description="today's turns, sessions before this one included")


class SummaryQueueStatus(Answer):
    """Chats waiting for their summaries (an import's), and what the background worker does."""

    waiting: int
    next_due_in_s: float | None = Field(description="when the next waiting chat is due; null when none waits")
    done: int = Field(description="chats summarised since the daemon started")
    current: str | None = Field(description="the chat being summarised")
    paused_for_s: float | None = Field(description="how long the worker still waits (a rate limit, Gemini away)")
    last_error: str | None


class McpServerStatus(Answer):
    """One of the user's MCP servers as the running daemon holds it."""

    name: str
    state: Literal["starting", "running", "restarting"] = Field(
        description="`starting`: its first start is under way; `restarting`: it failed or died and is started "
        "again after a backoff"
    )
    tools: list[str] = Field(description="the tools it offers the model (its own names), while it runs")
    last_error: str | None = Field(description="why it last failed or stopped (the failure's type)")
    settings: str = Field(
        description="a digest of its settings as the daemon read them at its start (the environment's values "
        "left out): `parla doctor` compares it with the config file"
    )


class StatusAnswer(Answer):
    state: str = Field(description="`idle`, `starting`, `active` or `stopping`")
    activation: str = Field(description="the `activation` setting")
    muted: bool
    microphone_open: bool
    chat: ChatRef = Field(description="the current chat")
    session_age_s: float | None = Field(description="seconds since the open session started; null when idle")
    idle_for_s: float | None = Field(description="seconds since anyone spoke in the open session")
    sessions: int = Field(description="sessions opened since the daemon started")
    restarts: int = Field(description="times listening failed and was restarted")
    wake_detections: int
    outbox: PendingWrites = Field(description="writes not yet on the store's server (Supabase)")
    unsaved_turns: int = Field(description="turns of the open session not stored yet")
    refused_turns: int = Field(description="turns the store refused for good, kept in `parla.refused.jsonl`")
    reembed: ReembedProgress | None = Field(description="a background re-embedding, if one ran since the start")
    copy_fill: CopyFillProgress | None = Field(
        description="the fill of this device's copy with every chat on Supabase (`filled_at`: when the last "
        "round that reached every chat began); null without a copy"
    )
    voice_to_voice: VoiceToVoice
    reminders_said: int = Field(description="reminders this daemon has said since it started")
    summaries: SummaryQueueStatus | None = Field(description="the summary queue; null when the store cannot say")
    mcp_servers: list[McpServerStatus] = Field(description="the user's MCP servers the running daemon holds")
    session_tools: list[str] | None = Field(
        description="the tools the open session's connection declared, by name; null when idle"
    )
    last_error: str | None


class ChatCard(Answer):
    chat_id: str
    title: str
    last_talked: str = Field(description="when, in words (`3 weeks ago (2026-11-02)`)")


class SwitchAnswer(Answer):
    result: Literal["switching", "already_here", "ambiguous", "none"]
    chat_id: str | None = None
    title: str | None = None
    last_talked: str | None = None
    candidates: list[ChatCard] | None = Field(None, description="with `ambiguous`: the chats to ask about")
    say: str = Field(description="what the model is told to say")
    offline: bool | None = Field(None, description="true when the answer comes from this device's copy")
    offline_note: str | None = None


class NewAnswer(Answer):
    result: Literal["switching"]
    chat_id: str
    title: str
    say: str
    queued: bool | None = Field(None, description="true when the chat waits in the outbox (Supabase away)")
    queued_note: str | None = None


class ResultAnswer(Answer):
    """The outcome of `talk`, `say`, `reminders`, `mute`, `unmute` and `stop`."""

    result: Literal[
        "activating",
        "already_active",
        "listening",
        "sent",
        "answered",
        "queued",
        "failed",
        "muted",
        "unmuted",
        "stopping",
        "ok",
    ]
    answer: str | None = Field(None, description="`answered`: the model's answer")
    error: str | None = Field(None, description="`failed`: why")
    stored: bool | None = Field(None, description="false when the text (and answer) were kept aside, not stored")
    kept: str | None = Field(None, description="the file they were kept in")
    chat_id: str | None = Field(None, description="`failed`: the chat the text was meant for")
    last_error: str | None = Field(None, description="past the wait: the daemon's last error")


class SearchAnswer(Answer):
    search: SearchResult = Field(description="what `parla search --json` prints")


class UiAnswer(Answer):
    url: str = Field(description="the inspector's address with its token")
    address: str = Field(description="the same without the token")


# Each command: its request and its answer (inside `{"ok": true, ...}`).
COMMANDS: dict[str, tuple[type[Request], type[Answer]]] = {
    "status": (StatusRequest, StatusAnswer),
    "switch": (SwitchRequest, SwitchAnswer),
    "new": (NewRequest, NewAnswer),
    "talk": (TalkRequest, ResultAnswer),
    "say": (SayRequest, ResultAnswer),
    "search": (SearchRequest, SearchAnswer),
    "reminders": (RemindersRequest, ResultAnswer),
    "summaries": (SummariesRequest, ResultAnswer),
    "ui": (UiRequest, UiAnswer),
    "mute": (MuteRequest, ResultAnswer),
    "unmute": (UnmuteRequest, ResultAnswer),
    "stop": (StopRequest, ResultAnswer),
}


def read_request(cmd: str, request: dict[str, Any]) -> Request:
    """The request through its command's model; a bad field is one line naming it and what it must be."""
    model = COMMANDS[cmd][0]
    try:
        return model.model_validate(request)
    except ValidationError as e:
        field = str(e.errors()[0]["loc"][0])
        raise ValueError(f"{cmd}'s `{field}` must be {model.model_fields[field].description}") from None


def answer(cmd: str, result: dict[str, Any]) -> dict[str, Any]:
    """What the handler answered, checked against the command's model (exactly the fields it set)."""
    return COMMANDS[cmd][1].model_validate(result).model_dump(mode="json", exclude_unset=True)
