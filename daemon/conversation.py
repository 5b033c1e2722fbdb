"""A spoken conversation, wired as the daemon runs it: the microphone and speaker, the Live
conversation with the chat tools, the current chat's memory over the store and a compaction
worker. `voice_services` opens what lives as long as the daemon (worker, devices);
`live_conversation` builds one session's conversation over them; `spoken_conversation` opens both
for `parla converse`. They close in reverse order (the conversation first, so its last turns are
stored before the worker and the devices go).

A session about to open waits for the MCP servers in their first start (`mcp_tools_started`), so
the first session after `parla run` has their tools; tools that come later, or go, reach the open
session at its next turn boundary (voice.live.renewal)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from google import genai

from parla.kernel.local_time import LocalClock
from parla.kernel.tasks import race
from parla.memory.compaction.compactor import CompactionWorker
from parla.records.turn import Turn, WebSource
from parla.tools.confirmations import Dialogue
from parla.tools.mcp.tools import McpTools
from parla.voice.audio.cues import switch_cue
from parla.voice.audio.devices import Microphone, Speaker
from parla.voice.audio.echo import EchoCanceller, PlayedAudio
from parla.voice.audio.near_end import NearEnd
from parla.voice.live.conversation import AudioSource, LiveConversation, SessionEvent

from .chat_memory import ChatMemory
from .memory_services import MemoryServices
from .model_tools import model_tools
from .start_chat import Why, said_through_parla

log = logging.getLogger(__name__)


@dataclass
class CurrentChat:
    """Which chat the conversation is in, how the user came to it, and moving it
    (tools.chats.ChatSession). Where the user last talked or last chose to be is noted on this
    device for the next start (daemon.start_chat)."""

    mem: MemoryServices
    worker: CompactionWorker
    chat_id: str
    conversation: LiveConversation | None = field(default=None, repr=False)
    on_stored: Callable[[str, Sequence[Turn]], None] | None = field(default=None, repr=False)
    why: Why = "talked"

    def memory(self, chat_id: str) -> ChatMemory:
        m = self.mem
        return ChatMemory(m.store, m.settings, chat_id, m.refused, self.worker, self._stored, m.held)

    def _stored(self, chat_id: str, turns: Sequence[Turn]) -> None:
        # the turns of a chat just left (its last answer) do not undo the move
        if chat_id == self.chat_id and said_through_parla(turns):
            self.why = "talked"
            self.mem.last_chat.note(chat_id, "talked")
        if self.on_stored is not None:
            self.on_stored(chat_id, turns)

    @property
    def switching(self) -> bool:
        return self.conversation is not None and self.conversation.switching

    def switch(self, chat_id: str) -> None:
        """Carry on in `chat_id`: in the open session once its turn is over, else in the next one."""
        if chat_id == self.chat_id:
            return
        left, self.chat_id, self.why = self.chat_id, chat_id, "chose"
        self.mem.last_chat.note(chat_id, "chose")
        if self.conversation is not None:
            self.conversation.switch_to(self.memory(chat_id))
        self.worker.schedule(left)  # the chat left behind is summarised in the background


@dataclass
class VoiceServices:
    worker: CompactionWorker
    microphone: Microphone
    speaker: Speaker
    mcp: McpTools


@asynccontextmanager
async def voice_services(mem: MemoryServices) -> AsyncIterator[VoiceServices]:
    s = mem.settings
    worker = mem.compaction_worker()
    played = PlayedAudio() if s.echo_cancellation else None
    # Local turn detection judges the microphone against the expected echo as well (voice.audio.near_end).
    near_end = NearEnd.of(s) if s.turn_detection == "local" else None
    echo = EchoCanceller(played, near_end=near_end) if played is not None else None
    async with (
        worker,
        Microphone(s.input_device, s.audio_block_ms, s.mic_queue_ms, echo) as microphone,
        Speaker(s.output_device, s.audio_block_ms, s.playback_buffer_s, played) as speaker,
        McpTools(s.mcp_servers, s.mcp_ping_s) as mcp,
    ):
        yield VoiceServices(worker, microphone, speaker, mcp)


async def mcp_tools_started(mcp: McpTools, limit_s: float, stop: asyncio.Event | None = None) -> bool:
    """Before a session opens: the MCP servers in their first start waited for, each until its
    start timeout and all for `limit_s` at most. False when `stop` was set meanwhile."""
    starting = mcp.starting()
    if not starting:
        return True
    log.info(
        "the session waits up to %g s for MCP servers still starting: %s",
        limit_s,
        ", ".join(starting),
        extra={"event": "mcp_waited", "servers": starting},
    )
    waiting = asyncio.create_task(mcp.started(limit_s), name="mcp:started")
    stopped = asyncio.create_task((stop or asyncio.Event()).wait(), name="mcp:stop")
    if stopped in await race({waiting, stopped}):
        return False
    late = mcp.starting()
    if late:
        log.warning(
            "the session opens without the tools of %s, still starting; they come at its next turn boundary",
            ", ".join(late),
            extra={"event": "mcp_late", "servers": late},
        )
    return True


def live_conversation(
    client: genai.Client,
    current: CurrentChat,
    microphone: AudioSource,
    speaker: Speaker,
    on_event: Callable[[SessionEvent], None] | None = None,
    mcp: McpTools | None = None,
) -> LiveConversation:
    """One session's conversation in the current chat, with the model's tools (daemon.model_tools): a
    look-up's sources are kept with the turn that speaks the answer; the session's model and user
    turns go to the confirmations' dialogue, not to `on_event` (use with `async with`)."""
    mem = current.mem
    clock = LocalClock(mem.settings.time_zone)
    conversation: LiveConversation | None = None
    dialogue = Dialogue()

    def cite(sources: list[WebSource]) -> None:
        if conversation is not None:
            conversation.cite(sources)

    def heard(event: SessionEvent) -> None:
        if event.kind == "model_turn_over":
            dialogue.model_turn_ended()
        elif event.kind == "user_turn":
            dialogue.user_turn_began()
        elif on_event is not None:
            on_event(event)

    conversation = LiveConversation(
        client,
        mem.settings,
        current.memory(current.chat_id),
        tools=model_tools(mem, current, clock, cite, dialogue, mcp),
        microphone=microphone,
        speaker=speaker,
        on_event=heard,
        clock=clock,
        switch_cue=switch_cue() if mem.settings.cues else None,
    )
    return conversation


@asynccontextmanager
async def spoken_conversation(
    mem: MemoryServices,
    chat_id: str,
    *,
    on_event: Callable[[SessionEvent], None] | None = None,
    client: genai.Client | None = None,
) -> AsyncIterator[LiveConversation]:
    live_client = client or mem.client  # fails first, with how to set a key, when there is none
    async with voice_services(mem) as voice:
        await mcp_tools_started(voice.mcp, mem.settings.mcp_start_wait_s)
        current = CurrentChat(mem, voice.worker, chat_id)
        async with live_conversation(
            live_client, current, voice.microphone, voice.speaker, on_event, voice.mcp
        ) as conversation:
            current.conversation = conversation
            yield conversation
