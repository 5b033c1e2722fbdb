"""`parla doctor`: checks what Parla needs, each problem with its fix. Never prints a key."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Literal

from google import genai
from google.genai import errors

from parla.kernel.models import ACTIONS, ModelRole, bare_id, replacement_advice, retirement
from parla.memory.errors import StoreError
from parla.memory.store.refused import RefusedTurns
from parla.tools.mcp.client import McpServer
from parla.tools.mcp.config import McpServerConfig
from parla.tools.mcp.tools import McpTools
from parla.voice.audio.devices import describe_devices, list_devices, resolve_device
from parla.voice.audio.speech import Speech, spoken
from parla.voice.audio.speech_model import SpeechModel
from parla.voice.audio.wake import WakePhrase
from parla.voice.config import SAMPLE_BYTES, SPEAKER_RATE
from parla.voice.errors import AudioDeviceError, SpeechFailed, WakeWordError

from .control import send_command
from .errors import ConfigError, ControlError, DaemonNotRunning
from .memory_services import NO_KEY, gemini_client
from .settings import Settings
from .stores import backend, open_store

Outcome = Literal["ok", "warn", "fail"]

# How long the online check waits for the Gemini API.
_ONLINE_TIMEOUT_S = 8.0
# How long an MCP server may take to start and list its tools.
_MCP_START_S = 10.0


@dataclass(frozen=True)
class Check:
    name: str
    outcome: Outcome
    detail: str
    fix: str = ""


def _key(settings: Settings) -> Check:
    if settings.has_gemini_key:
        return Check("Gemini API key", "ok", "set (not shown)")
    return Check(
        "Gemini API key",
        "fail",
        "not set: talking needs it; chats, show, search, import and stats work without one",
        f"Parla {NO_KEY}",
    )


_ROLE_NAMES: dict[ModelRole, str] = {
    "live": "Live model",
    "summary": "summary model",
    "embedding": "embedding model",
    "look_up": "look-up model",
    "speech": "speech model",
}
# How many fitting models a failed check names.
_LISTED = 8


def _used_models(settings: Settings) -> list[tuple[ModelRole, str]]:
    """The Gemini models these settings use (all need the key)."""
    used: list[tuple[ModelRole, str]] = [("live", settings.live_model)]
    if settings.summarizer == "gemini" or (settings.summarizer == "auto" and settings.has_gemini_key):
        used.append(("summary", settings.summary_model))
    if settings.embedder_in_use == "gemini":
        used.append(("embedding", settings.embedding_model))
    if settings.look_up:
        used.append(("look_up", settings.look_up_model))
    if settings.reminder_voice == "auto":
        used.append(("speech", settings.speech_model))
    return used


async def _fitting(client: genai.Client, role: ModelRole) -> list[str]:
    """The models the key can use for `role` (models.list filtered by the method the role needs),
    retired ones left out."""
    names = []
    async with asyncio.timeout(_ONLINE_TIMEOUT_S):
        async for model in await client.aio.models.list(config={"page_size": 100}):
            name = bare_id(model.name or "")
            if ("tts" in name) != (role == "speech"):  # text and speech models both offer generateContent
                continue
            if ACTIONS[role] in (model.supported_actions or []) and retirement(name) is None:
                names.append(name)
    return names


async def _unusable(client: genai.Client, role: ModelRole, model: str, why: str) -> Check:
    try:
        fitting = await _fitting(client, role)
    except (errors.APIError, TimeoutError, OSError):
        fitting = []
    listed = f"; your key can use: {', '.join(fitting[:_LISTED])}" if fitting else ""
    return Check(f"{_ROLE_NAMES[role]} {model}", "fail", why, replacement_advice(role, model) + listed)


async def _model(client: genai.Client, role: ModelRole, model: str) -> Check:
    name = f"{_ROLE_NAMES[role]} {model}"
    try:
        async with asyncio.timeout(_ONLINE_TIMEOUT_S):
            found = await client.aio.models.get(model=model)
    except TimeoutError:
        return Check(name, "warn", "the Gemini API did not answer (offline?)", "check the network connection")
    except errors.APIError as e:
        if e.code in (400, 401, 403):
            return Check(name, "fail", f"the key was refused ({e.code})", "create a new key in Google AI Studio")
        if e.code == 404:
            known = retirement(model)
            why = f"{known.status} ({known.when})" if known else "the Gemini API has no such model"
            return await _unusable(client, role, model, why)
        return Check(name, "warn", f"the Gemini API answered {e.code}: {e.message}", "try again later")
    except Exception as e:  # noqa: BLE001 - any failure here is the report
        return Check(name, "warn", f"could not reach the Gemini API ({type(e).__name__})", "check the network")
    if ACTIONS[role] not in (found.supported_actions or []):
        return await _unusable(client, role, model, f"the model does not offer {ACTIONS[role]}")
    known = retirement(model)
    if known is not None:
        return Check(name, "warn", f"available but {known.status} ({known.when})", replacement_advice(role, model))
    return Check(name, "ok", "available")


async def _models(settings: Settings) -> list[Check]:
    """Each model in use, asked for with models.get; one that is missing, cannot serve its role or
    is on its way out is reported with the setting to change and what to put there."""
    used = _used_models(settings)
    if not settings.has_gemini_key:
        return [Check(f"{_ROLE_NAMES[role]} {model}", "warn", "not checked without a key") for role, model in used]
    try:
        client = gemini_client(settings)
    except ConfigError as e:
        return [Check(f"{_ROLE_NAMES[role]} {model}", "fail", str(e)) for role, model in used]
    return [await _model(client, role, model) for role, model in used]


def _audio(settings: Settings) -> list[Check]:
    try:
        devices = list_devices()
    except AudioDeviceError as e:
        return [Check("audio", "fail", str(e))]
    checks = []
    for kind, spec in (("input", settings.input_device), ("output", settings.output_device)):
        name = "microphone" if kind == "input" else "speaker"
        try:
            index = resolve_device(spec, kind)
        except AudioDeviceError as e:
            checks.append(Check(name, "fail", str(e)))
            continue
        chosen = next((d.name for d in devices if d.index == index), "the system default")
        checks.append(Check(name, "ok", chosen))
    checks.append(
        Check("audio devices", "ok", describe_devices(devices))
        if devices
        else Check(
            "audio devices", "fail", describe_devices(devices), "start the sound server (PipeWire or PulseAudio)"
        )
    )
    return checks


async def _store(settings: Settings) -> list[Check]:
    kept = backend(settings)
    where = kept.describe(settings)
    try:
        async with open_store(settings) as store:
            version = await store.schema_version()
            stats = await store.stats()
            elsewhere = (await store.pending_writes()).elsewhere
    except (StoreError, ConfigError, OSError) as e:
        # a SQLite store's error already says what to do about that file
        return [Check("store", "fail", f"{where}: {e}", kept.fix)]
    schema = f", schema version {version}" if version is not None else ""
    checks = [Check("store", "ok", f"{where}{schema}: {stats.total_chats} chats, {stats.total_messages} messages")]
    if elsewhere:
        waiting = "; ".join(f"{q.waiting + q.refused} writes wait for {q.project}" for q in elsewhere)
        fix = "`parla outbox list` says how to send them to their project or drop them"
        checks.append(Check("outbox of other projects", "warn", waiting, fix))
    return checks


def _refused(settings: Settings) -> Check:
    kept = RefusedTurns(RefusedTurns.beside(settings.store_path))
    count = kept.count()
    if not count:
        return Check("refused turns", "ok", "none")
    return Check(
        "refused turns",
        "warn",
        f"{count} turns the store did not take are kept in {kept.path}",
        "each line says which chat the turn belongs to and why it was kept; the daemon offers them "
        "to the store again at its next start",
    )


def _wake(settings: Settings) -> Check:
    if settings.activation != "wake":
        return Check("wake phrase", "ok", f"not used (activation {settings.activation})")
    try:
        WakePhrase(settings.wake_phrase, settings.wake_threshold)
    except WakeWordError as e:
        return Check("wake phrase", "fail", str(e))
    except ImportError as e:
        return Check("wake phrase", "fail", f"pocketsphinx is missing ({e})", "reinstall Parla")
    return Check("wake phrase", "ok", f"{settings.wake_phrase!r} (offline model loaded)")


async def _daemon(settings: Settings) -> tuple[Check, dict[str, Any] | None]:
    """The daemon's check, and its status when it answers."""
    try:
        status = await send_command(settings.control_socket, "status", timeout=3)
    except DaemonNotRunning:
        return Check("daemon", "warn", "not running", "`parla run`, or `parla service install`"), None
    except (ControlError, OSError, TimeoutError) as e:
        return Check("daemon", "fail", f"the control socket does not answer ({e})", "restart it: `parla stop`"), None
    return Check("daemon", "ok", f"{status['state']} in chat {status['chat']['id'][:8]}"), status


_CHECK_CONFIG = "check its command or url in the config file (`parla config path`)"
_RESTART = "restart the daemon to take the config file up: `parla stop` and `parla run`, or `parla service restart`"


def _mcp_check(server: McpServer) -> Check:
    name = f"MCP server {server.config.name}"
    if not server.running:
        why = (
            f"did not start ({server.last_error})" if server.last_error else f"did not start within {_MCP_START_S:g} s"
        )
        return Check(name, "fail", why, _CHECK_CONFIG)
    tools = [t.name if t.read_only else f"{t.name} (asks the user first)" for t in server.tools]
    return Check(name, "ok", f"started: {', '.join(tools) or 'no tools allowed'}")


def _held_check(held: dict[str, Any]) -> Check:
    """A server as the running daemon holds it (its settings are the config file's)."""
    name = f"MCP server {held['name']}"
    if held["state"] == "running":
        return Check(name, "ok", f"running in the daemon: {', '.join(held['tools']) or 'no tools allowed'}")
    if held["state"] == "starting":
        return Check(name, "ok", "starting in the daemon (its first start)")
    why = f" ({held['last_error']})" if held["last_error"] else ""
    return Check(name, "fail", f"the daemon cannot keep it running{why}; it tries again after a backoff", _CHECK_CONFIG)


async def _started(configs: list[McpServerConfig]) -> list[Check]:
    """Each MCP server started once, as the daemon would, with its tools (never its environment)."""
    async with McpTools(configs) as mcp:
        loop = asyncio.get_running_loop()
        until = loop.time() + _MCP_START_S  # a deadline the loop keeps itself: nothing to cancel
        while not all(s.running or s.last_error for s in mcp.servers) and loop.time() < until:
            await asyncio.sleep(0.05)
        return [_mcp_check(server) for server in mcp.servers]


def _milliseconds(pcm: bytes) -> int:
    return len(pcm) * 1000 // (SPEAKER_RATE * SAMPLE_BYTES)


async def _mcp(settings: Settings, status: dict[str, Any] | None) -> list[Check]:
    """The MCP servers: with a daemon running, what it holds, and those of the config file it does not
    hold as written (added or changed since it started: started here, and a restart advised); else
    each started here once."""
    configs = settings.mcp_servers
    if status is None:
        return await _started(configs) if configs else []
    held = {m["name"]: m for m in status.get("mcp_servers", [])}  # none from a daemon older than the field
    unheld = [c for c in configs if c.name not in held or held[c.name]["settings"] != c.fingerprint()]
    started = dict(zip([c.name for c in unheld], await _started(unheld), strict=True)) if unheld else {}
    checks: list[Check] = []
    for config in configs:
        check = started.get(config.name)
        if check is None:
            checks.append(_held_check(held[config.name]))
            continue
        if config.name in held:
            why = "changed in the config file since the running daemon started"
        else:
            why = "in the config file, not in the running daemon"
        outcome: Outcome = "warn" if check.outcome == "ok" else "fail"
        checks.append(Check(check.name, outcome, f"{why}; {check.detail}", _RESTART))
    for name in held.keys() - {c.name for c in configs}:
        gone = "the running daemon has it; the config file no longer does"
        checks.append(Check(f"MCP server {name}", "warn", gone, _RESTART))
    return checks


async def _speech(settings: Settings) -> Check:
    """The offline speech command reminders are said with (alone, or when the speech model is not
    used), tried on one word."""
    try:
        pcm = await spoken("Parla", settings.reminder_speech_command)
    except SpeechFailed as e:
        return Check(
            "reminder speech",
            "warn",
            f"{e}: reminders are heard as a tone only when the speech model is not used",
            "install flite (apt install flite), or set PARLA_REMINDER_SPEECH_COMMAND",
        )
    return Check(
        "reminder speech",
        "ok",
        f"{settings.reminder_speech_command.split()[0]} ({_milliseconds(pcm)} ms for one word)",
    )


async def _reminder_voice(settings: Settings) -> Check:
    """Which voice says the reminders: the speech model, asked for one word, or the offline command."""
    offline = Speech(settings.reminder_speech_command, None, settings.speech_timeout_s).offline
    if settings.reminder_voice == "offline":
        return Check("reminder voice", "ok", f"{offline}: PARLA_REMINDER_VOICE=offline keeps the words on this machine")
    if not settings.has_gemini_key:
        return Check("reminder voice", "ok", f"{offline}: no Gemini key (with one, Parla's own voice)")
    model = SpeechModel(gemini_client(settings), settings.speech_model, settings.live_voice, settings.live_language)
    try:
        async with asyncio.timeout(settings.speech_timeout_s):
            pcm = await model.spoken("Parla")
    except TimeoutError:
        why = model.late(settings.speech_timeout_s)
    except SpeechFailed as e:
        why = str(e)
    else:
        return Check("reminder voice", "ok", f"Parla's own voice: {model}, {_milliseconds(pcm)} ms for one word")
    return Check(
        "reminder voice",
        "warn",
        f"{why}: reminders are said by {offline}",
        "check the network and the key; PARLA_SPEECH_MODEL names the model (the speech model check above says "
        "whether your key can use it)",
    )


async def diagnose(settings: Settings) -> list[Check]:
    checks = [_key(settings), *await _models(settings)]
    checks += await asyncio.to_thread(_audio, settings)
    checks += [*await _store(settings), await asyncio.to_thread(_refused, settings)]
    daemon, status = await _daemon(settings)
    checks += [
        await asyncio.to_thread(_wake, settings),
        await _reminder_voice(settings),
        await _speech(settings),
        daemon,
    ]
    return checks + await _mcp(settings, status)
