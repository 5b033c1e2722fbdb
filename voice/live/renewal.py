"""When the open Live session gives way to the next one, and what the next one resumes:
- The newest resumable handle is kept. A new connection resumes with it while it is younger than
  `resume_handle_max_age_s`; otherwise, or after a 1007, the session starts fresh (voice.live.connections).
- GoAway: reconnect with the handle as soon as the current turn completes, or `goaway_margin_s`
  before the deadline if the model is not speaking then. A reply is never cut by us.
- A switch of chats: once the model's current turn completes (a tool that asks for the switch lets
  the model announce it first), or at once with no turn under way; the handle is dropped, as the
  old session's context is the old chat's.
- The tools changed (an MCP server's came or went): the Live API takes tools only in the setup, the
  first message of a connection, and takes a changed setup when a session resumes ("You cannot
  update the configuration while the connection is open. However, you can change the
  configuration parameters, except the model, when pausing and resuming via the session resumption
  mechanism": the Live API's WebSockets reference, ai.google.dev/api/live; the setup is "sent in
  the first (and only in the first)" client message, BidiGenerateContentSetup in the
  generativelanguage v1beta API). So the session resumes with the handle, the tools of now in its
  setup: at once when nothing is under way (no word of the user's turn heard or spoken unanswered,
  the model silent, no tool running), else once the model's turn is over."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass

from ..config import VoiceConfig
from .latency import VoiceToVoice
from .session_memory import SessionMemory
from .status import Events
from .tool_calls import ToolCalls
from .transcript import TranscriptAssembler

log = logging.getLogger(__name__)


@dataclass
class _Handle:
    value: str
    received_at: float


class Renewal:
    def __init__(
        self,
        config: VoiceConfig,
        assembler: TranscriptAssembler,
        tool_calls: ToolCalls,
        events: Events,
        latency: VoiceToVoice,
    ) -> None:
        self.config = config
        self.assembler = assembler
        self.tool_calls = tool_calls
        self.events = events
        self.latency = latency  # knows of speech sent and not answered yet
        self.next_memory: SessionMemory | None = None  # a switch asked for, to this chat
        self._asked = asyncio.Event()  # the open session is to give way now
        self._draining = False  # a GoAway came: renew once the model's turn is over
        self._tools_changed = False  # the tools differ from the open session's: renew at a turn's end
        self._goaway_timer: asyncio.TimerHandle | None = None
        self._handle: _Handle | None = None

    @property
    def switching(self) -> bool:
        """A switch was asked for and has not happened yet."""
        return self.next_memory is not None

    def resumable(self, handle: str) -> None:
        self._handle = _Handle(handle, time.monotonic())

    def usable_handle(self) -> str | None:
        h = self._handle
        if h is None or time.monotonic() - h.received_at > self.config.resume_handle_max_age_s:
            return None
        return h.value

    def forget_handle(self) -> None:
        """Whatever the handle carried was refused, or belongs to another chat: never resend it."""
        self._handle = None

    def switch(self, memory: SessionMemory) -> None:
        self.next_memory = memory
        if self._quiet():
            self._asked.set()

    def switched(self) -> None:
        self.next_memory = None
        self.forget_handle()

    def go_away(self, time_left: float | None) -> None:
        self.events.emit("goaway", f"{time_left}s left" if time_left is not None else "")
        log.info("live goAway, %s s left", time_left, extra={"event": "live_goaway", "time_left": time_left})
        self._draining = True
        if self._quiet():
            self._asked.set()
            return
        if time_left is not None:
            delay = max(0.0, time_left - self.config.goaway_margin_s)
            self._goaway_timer = asyncio.get_running_loop().call_later(delay, self._goaway_deadline)

    def tools_changed(self) -> None:
        """The tools differ from those the open session declared: renew now if nothing is under
        way, else once the model's turn is over."""
        self._tools_changed = True
        if self._quiet() and self.assembler.current.empty and not self.latency.unanswered:
            self._asked.set()

    def turn_over(self) -> None:
        """The model's turn is over: a GoAway, a switch or changed tools waiting for it renew the session now."""
        waiting = self._draining or self.next_memory is not None or self._tools_changed
        if waiting and not self.assembler.model_speaking:
            self._asked.set()

    def opened(self) -> None:
        self._asked.clear()
        self._draining = False
        self._tools_changed = False

    def closed(self) -> None:
        if self._goaway_timer is not None:
            self._goaway_timer.cancel()
        self._goaway_timer = None

    async def wait(self) -> None:
        """Until the open session is to give way."""
        await self._asked.wait()

    def _quiet(self) -> bool:
        return not self.assembler.model_speaking and not self.tool_calls.pending

    def _goaway_deadline(self) -> None:
        if self._draining and not self.assembler.model_speaking:
            self._asked.set()
