"""The daemon's knobs: activation, the idle timeout, cues, the control socket, the memory inspector,
shutdown, logs, reminders, MCP servers."""

from __future__ import annotations

import os
import socket
import tempfile
from pathlib import Path
from typing import Annotated, Any, Literal

import platformdirs
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from parla.kernel.models import DEFAULT_LOOK_UP_MODEL
from parla.tools.mcp.config import McpServerConfig
from parla.ui import limits

from .control import REQUEST_TIMEOUT_S


def expand_path(value: Any) -> Any:
    """`~`, `~user`, `$HOME` and other variables in a path setting, as a shell would expand them
    (a value from a file or a service's environment never went through a shell)."""
    if isinstance(value, str | Path):
        return Path(os.path.expandvars(os.path.expanduser(os.fspath(value))))
    return value


UserPath = Annotated[Path, BeforeValidator(expand_path)]

Activation = Literal["wake", "push_to_talk", "always_on"]


def default_control_socket() -> Path:
    # The user runtime dir (XDG_RUNTIME_DIR, /run/user/<uid>) is private to the user and cleared at
    # logout; without one, a per-user folder under the temp dir is made 0700 when the daemon starts.
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    base = Path(runtime) / "parla" if runtime else Path(tempfile.gettempdir()) / f"parla-{os.getuid()}"
    return base / "control.sock"


def default_ui_token_file() -> Path:
    return Path(platformdirs.user_config_dir("parla")) / "ui-token"


class DaemonConfig(BaseModel):
    # validated as part of Settings, which builds its own validator: this one is built only when
    # the model is made alone (tests, benchmarks), not by every `parla` command at start-up
    model_config = ConfigDict(defer_build=True)

    activation: Activation = Field(
        "wake",
        description="How a session opens: `wake` (the wake phrase, detected offline), `push_to_talk` "
        "(`parla talk`), `always_on` (a session whenever the daemon runs).",
    )
    wake_phrase: str = Field("hey parla", min_length=2, description="The wake phrase (English words).")
    wake_threshold: float = Field(
        1e-30,
        gt=0,
        lt=1,
        description="Keyword-spotting threshold: smaller hears the phrase more easily, and other speech more "
        "often (1e-40 .. 1e-15; 1e-30 heard 12 of 12 test utterances and nothing in 4.6 minutes of other speech).",
    )
    idle_timeout: float = Field(
        30.0, gt=0, description="Seconds of silence (nobody speaking) after which the session closes."
    )
    cues: bool = Field(True, description="A short tone when a session opens and when it closes.")
    control_socket: UserPath = Field(
        default_factory=default_control_socket, description="The daemon's control socket (mode 0600)."
    )
    control_request_timeout_s: float = Field(
        REQUEST_TIMEOUT_S,
        gt=0,
        description="Seconds a client of the control socket has to send each request line before it is closed.",
    )
    shutdown_timeout_s: float = Field(
        10.0, gt=0, description="Longest wait at shutdown for the current turn and the store to finish."
    )
    shutdown_keep_s: float = Field(
        2.0,
        ge=0,
        description="At shutdown, the store is waited for until this long before `shutdown_timeout_s` ends; "
        "turns it has not taken by then are kept locally and stored at the next start.",
    )
    ui: bool = Field(True, description="The running daemon serves the memory inspector (`parla ui` opens it).")
    ui_port: int = Field(
        8765, ge=0, le=65535, description="Port of the memory inspector on 127.0.0.1 (0: any free port)."
    )
    ui_token_file: UserPath = Field(
        default_factory=default_ui_token_file,
        description="The memory inspector's secret token, made once (mode 0600); delete it for a new address.",
    )
    ui_max_connections: int = Field(
        limits.MAX_CONNECTIONS,
        ge=8,
        description="Connections the memory inspector keeps open at most; past it the one idle longest is closed.",
    )
    ui_request_timeout_s: float = Field(
        limits.REQUEST_TIMEOUT_S,
        gt=0,
        description="Seconds a connection to the memory inspector has to send a whole request before it is closed.",
    )
    log_repeat_window_s: float = Field(
        60.0,
        ge=0,
        description="A warning or error identical to one logged less than this many seconds ago is counted, "
        "not written again (0: every one is written).",
    )
    log_format: Literal["text", "json"] = Field(
        "text", description="`json` writes one JSON object per log line (for journald and log shippers)."
    )
    device_name: str = Field(
        default_factory=socket.gethostname,
        min_length=1,
        description="This device's name: a reminder set here is said here first, and the store records "
        "which device said each one.",
    )
    reminder_handoff_s: float = Field(
        10.0,
        ge=0,
        description="Seconds a due reminder is left to the device it was set on before another running device "
        "of the account says it instead.",
    )
    reminder_takeover_s: float = Field(
        300.0,
        gt=0,
        description="Seconds after which a reminder another device claimed and never finished saying (it was "
        "stopped, killed or lost power while saying it, and has not started again) is said by this one.",
    )
    reminder_recheck_s: float = Field(
        60.0,
        gt=0,
        description="Seconds between reads of the store for reminders set or cancelled elsewhere (other devices, "
        "`parla reminders` while Supabase is the store); ones set here are seen at once.",
    )
    reminder_voice: Literal["auto", "offline"] = Field(
        "auto",
        description="auto: reminders are said in Parla's own voice (the speech model, PARLA_SPEECH_MODEL, in "
        "PARLA_LIVE_VOICE) when a Gemini key is set, by the offline command when there is none or the model fails; "
        "offline: always by the offline command (the words never leave this machine).",
    )
    reminder_speech_command: str = Field(
        "flite -voice slt -f {text_file} -o {wav}",
        min_length=1,
        description="The offline speech command that says a reminder at its time ({text_file}: a file holding the "
        "words, {text}: the words themselves, {wav}: the WAV file it writes; the words are on its standard input "
        "too), e.g. `espeak-ng -v it -w {wav} -f {text_file}` for Italian.",
    )
    mcp_servers: list[McpServerConfig] = Field(
        default_factory=list,
        description="The user's MCP servers (`[[mcp_servers]]` tables in config.toml): their tools are offered "
        "to the live model as `name__tool`.",
    )
    mcp_ping_s: float = Field(
        30.0, gt=0, description="Seconds between pings that find an MCP server which died while idle."
    )
    mcp_start_wait_s: float = Field(
        10.0,
        ge=0,
        description="Seconds a session that opens while MCP servers are in their first start waits for their "
        "tools, at most (each server no longer than its start_timeout_s; one that failed is not waited for). "
        "Tools that come later are declared at the session's next turn boundary.",
    )
    look_up: bool = Field(
        True,
        description="Offer the live model `look_up`: questions about today's world answered from Google Search "
        "by one grounded request on look_up_model (sources kept with the answer).",
    )
    look_up_model: str = Field(
        DEFAULT_LOOK_UP_MODEL, description="Gemini text model that answers look-ups, grounded on Google Search."
    )
    look_up_timeout_s: float = Field(
        8.0,
        gt=0,
        description="Seconds a look-up may take; past them (or with no key or network) the model says it cannot "
        "look things up now.",
    )
    max_tool_declarations: int = Field(
        64,
        ge=1,
        le=64,
        description="Most function declarations a session gets (the Gemini API takes 64): Parla's own tools "
        "always, then MCP tools in config order while they fit.",
    )
