"""`parla doctor`: checks what Parla needs, each problem with its fix. Never prints a key."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Literal

from daemon.control import CommandError, DaemonNotRunning, send_command
from daemon.memory_services import NO_KEY, ConfigError, gemini_client, open_store
from daemon.settings import Settings
from daemon.wake import WakePhrase, WakeWordError
from memory.store import StoreError
from memory.store.supabase import SupabaseChatStore
from voice.audio import AudioDeviceError, describe_devices, list_devices, resolve_device

Outcome = Literal["ok", "warn", "fail"]

# How long the online check waits for the Gemini API.
_ONLINE_TIMEOUT_S = 8.0


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


async def _live_model(settings: Settings) -> Check:
    name = f"Live model {settings.live_model}"
    if not settings.has_gemini_key:
        return Check(name, "warn", "not checked without a key")
    try:
        client = gemini_client(settings)
        await asyncio.wait_for(client.aio.models.get(model=settings.live_model), _ONLINE_TIMEOUT_S)
    except ConfigError as e:
        return Check(name, "fail", str(e))
    except TimeoutError:
        return Check(name, "warn", "the Gemini API did not answer (offline?)", "check the network connection")
    except Exception as e:  # noqa: BLE001 - any failure here is the report
        code = getattr(e, "code", None)
        if code in (400, 401, 403):
            return Check(name, "fail", f"the key was refused ({code})", "create a new key in Google AI Studio")
        if code == 404:
            return Check(name, "fail", "the model does not exist", "set PARLA_LIVE_MODEL to a Live model")
        return Check(name, "warn", f"could not reach the Gemini API ({type(e).__name__})", "check the network")
    return Check(name, "ok", "reachable")


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


async def _store(settings: Settings) -> Check:
    where = f"Supabase {settings.supabase_url}" if settings.store == "supabase" else f"SQLite {settings.store_path}"
    try:
        async with open_store(settings) as store:
            version = await store.schema_version() if isinstance(store, SupabaseChatStore) else None
            stats = await store.stats()
    except (StoreError, ConfigError, OSError) as e:
        # a SQLite store's error already says what to do about that file
        fix = "`parla db migrate` or `parla login`" if settings.store == "supabase" else ""
        return Check("store", "fail", f"{where}: {e}", fix)
    schema = f", schema version {version}" if version is not None else ""
    return Check("store", "ok", f"{where}{schema}: {stats.total_chats} chats, {stats.total_messages} messages")


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


async def _daemon(settings: Settings) -> Check:
    try:
        status = await send_command(settings.control_socket, "status", timeout=3)
    except DaemonNotRunning:
        return Check("daemon", "warn", "not running", "`parla run`, or `parla service install`")
    except (CommandError, OSError, TimeoutError) as e:
        return Check("daemon", "fail", f"the control socket does not answer ({e})", "restart it: `parla stop`")
    return Check("daemon", "ok", f"{status['state']} in chat {status['chat']['id'][:8]}")


async def diagnose(settings: Settings) -> list[Check]:
    checks = [_key(settings), await _live_model(settings)]
    checks += await asyncio.to_thread(_audio, settings)
    checks += [await _store(settings), await asyncio.to_thread(_wake, settings), await _daemon(settings)]
    return checks
