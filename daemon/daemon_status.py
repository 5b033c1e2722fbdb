"""What the daemon keeps about itself, and the answer to `parla status` built from it and from
what it runs."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from dataclasses import dataclass
from typing import Any, Literal

from parla.memory.compaction.summary_queue import queue_status
from parla.memory.errors import StoreError
from parla.tools.mcp.tools import McpTools
from parla.voice.audio.gated_microphone import GatedMicrophone
from parla.voice.live.conversation import LiveConversation
from parla.voice.live.latency import LatencyDay, summary

from .memory_services import MemoryServices
from .start_chat import Why

State = Literal["starting", "idle", "active", "stopping"]


@dataclass
class DaemonStatus:
    state: State = "starting"
    session_started: float | None = None
    sessions: int = 0
    wake_detections: int = 0
    restarts: int = 0  # unexpected failures the daemon went on after
    last_error: str | None = None
    kept_turns: int = 0  # turns not stored in time, kept aside for the next start
    lost_turns: int = 0  # turns neither stored nor kept aside (the local file failed too)


async def status_answer(
    mem: MemoryServices,
    status: DaemonStatus,
    gate: GatedMicrophone,
    chat_id: str,
    why: Why,
    conversation: LiveConversation | None,
    latency_day: LatencyDay,
    reminders_said: int,
    mcp: McpTools,
) -> dict[str, Any]:
    """`parla status`: the daemon's state, the chat, the open session, the store's outbox, the
    background work and the MCP servers. A chat title the store cannot give is None, with the error."""
    try:
        title = (await mem.store.get_chat(chat_id)).title
    except StoreError as e:
        title, status.last_error = None, str(e)
    outbox = dataclasses.asdict(await mem.store.pending_writes())
    started = status.session_started
    session_turns = list(conversation.latency.turns) if conversation is not None else []
    return {
        "state": status.state,
        "activation": mem.settings.activation,
        "muted": gate.muted,
        "microphone_open": gate.is_open,
        "chat": {"id": chat_id, "title": title, "why": why},
        "session_age_s": round(time.monotonic() - started, 1) if started is not None else None,
        "idle_for_s": round(conversation.idle_for(), 1) if conversation is not None else None,
        "sessions": status.sessions,
        "restarts": status.restarts,
        "wake_detections": status.wake_detections,
        "outbox": outbox,
        "unsaved_turns": conversation.unsaved_turns() if conversation is not None else 0,
        "refused_turns": await asyncio.to_thread(mem.refused.count),
        "reembed": dataclasses.asdict(reembed) if (reembed := mem.reembedder.progress) else None,
        "copy_fill": dataclasses.asdict(fill.progress) if (fill := mem.copy_fill) else None,
        "voice_to_voice": {
            "session": summary(session_turns),
            "day": summary(latency_day.today(session_turns)),
        },
        "reminders_said": reminders_said,
        "summaries": await queue_status(mem.store, mem.summary_progress),
        "mcp_servers": [
            {
                "name": server.config.name,
                "state": server.state,
                "tools": [t.name for t in server.tools],
                "last_error": server.last_error,
                "settings": server.config.fingerprint(),
            }
            for server in mcp.servers
        ],
        "session_tools": sorted(conversation.status.declared) if conversation is not None else None,
        "last_error": status.last_error,
    }
