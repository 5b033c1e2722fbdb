"""The conversation with the Gemini Live model, owned by `LiveConversation` (an async context
manager): the connection loop with its send and receive tasks (voice.live.connections, renewed as
voice.live.renewal says), a saver task for finished turns (voice.live.turn_saver, for the chat the
conversation is in: voice.live.chat_turns), and the tool calls' tasks (voice.live.tool_calls).
What the user says goes through the turn detection (voice.turns.detection) on its way to the
session (voice.live.send); typed turns and tools' answers go when voice.live.delivery says; the
model's turn, its audio and its end, follow the server's content (voice.live.model_turn).

Switching chats (`switch_to`): what is typed or said once the switch is decided goes to the new
session only. What is still unsaved when the session closes (after `save_drain_s`, or by the
owner's `finish_by`) is kept locally."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Self

from google import genai

from parla.kernel.local_time import LocalClock
from parla.kernel.tasks import cancel_and_wait
from parla.records.turn import Turn, WebSource

from ..config import VoiceConfig
from ..errors import LiveSessionFailed
from ..turns.choice import turn_detection
from .chat_turns import ChatTurns
from .connections import Connections
from .delivery import Delivery
from .latency import VoiceToVoice
from .messages import Outbox, Text
from .model_turn import ModelTurn
from .profiles import profile_for
from .renewal import Renewal
from .send import AudioSink, AudioSource, Sender
from .session_memory import SessionMemory
from .status import Events, LiveStatus, SessionEvent
from .tool_calls import ToolCalls, ToolHandler
from .transcript import TranscriptAssembler
from .turn_saver import TurnSaver

log = logging.getLogger(__name__)


class LiveConversation:
    def __init__(
        self,
        client: genai.Client,
        config: VoiceConfig,
        memory: SessionMemory,
        tools: ToolHandler | None = None,
        microphone: AudioSource | None = None,
        speaker: AudioSink | None = None,
        on_event: Callable[[SessionEvent], None] | None = None,
        status: LiveStatus | None = None,
        clock: LocalClock | None = None,  # None: the system clock in config.time_zone
        switch_cue: bytes | None = None,  # played over whatever plays the moment a switch is decided
    ) -> None:
        self.config = config
        self.speaker = speaker
        self.switch_cue = switch_cue
        self.status = status or LiveStatus()
        events = Events(on_event)
        self.assembler = TranscriptAssembler(
            model_variant=config.live_model, on_user_turn=lambda: events.emit("user_turn")
        )
        self.profile = profile_for(config.live_model)
        self.latency = VoiceToVoice(config.latency_speech_rms, growth_ratio=config.latency_growth_ratio)
        self._outbox = Outbox()
        self._tool_calls = ToolCalls(tools, on_done=self._outbox.wake)
        self._saver = TurnSaver(self.status, events, config.save_drain_s)
        self._chat = ChatTurns(memory, self.assembler, self._saver, events)
        self._renewal = Renewal(config, self.assembler, self._tool_calls, events, self.latency)
        self._detection = turn_detection(config, speaker)
        self._model_turn = ModelTurn(
            config, self._chat, self._detection, speaker, self.latency, self._outbox, self._tool_calls, self._renewal
        )
        self._sender = Sender(
            self._outbox,
            microphone,
            self._detection,
            self._model_turn,
            self.latency,
            switching=lambda: self._renewal.switching,
            hold_s=config.switch_hold_s,
        )
        delivery = Delivery(
            self.profile, self._outbox, self._chat, self._model_turn, self._tool_calls, self._renewal, self.status
        )
        self._connections = Connections(
            client,
            config,
            clock or LocalClock(config.time_zone),
            self.profile,
            self.status,
            events,
            self._chat,
            self._renewal,
            self._model_turn,
            self._sender,
            delivery,
            self._outbox,
            self._tool_calls,
        )
        self._run_task: asyncio.Task[None] | None = None

    @property
    def memory(self) -> SessionMemory:
        """The chat the conversation is in (a switch changes it once its session opens)."""
        return self._chat.memory

    # lifecycle

    async def __aenter__(self) -> Self:
        self._saver.start()
        self._run_task = asyncio.create_task(self._connections.run(), name="live:run")
        return self

    async def __aexit__(self, *exc: object) -> None:
        run = self._run_task
        await cancel_and_wait(run)
        self._detection.close()
        if self.switching and self._sender.unsent_s:
            log.warning(
                "the conversation ended during a switch: %.1f s said since it reached no session",
                self._sender.unsent_s,
                extra={"event": "switch_audio_unsent"},
            )
        await self._tool_calls.cancel_all()
        self._chat.store(self.assembler.flush())
        await self._saver.close()
        # A run that failed other than by giving up (the store could not give a seed) says so
        # to the owner, after every turn is stored or kept.
        if run is not None and run.done() and not run.cancelled():
            error = run.exception()
            if error is not None and not isinstance(error, LiveSessionFailed):
                raise error

    async def wait(self) -> None:
        """Until the conversation ends on its own: it only does so by giving up (LiveSessionFailed)."""
        assert self._run_task is not None, "use LiveConversation inside `async with`"
        await asyncio.shield(self._run_task)

    def switch_to(self, memory: SessionMemory) -> None:
        """Carry on in another chat: once the model's current turn completes (a tool that asks
        for the switch lets the model announce it first), what is pending is stored in this
        chat, the session closes, and a fresh one opens seeded with `memory`. With no turn under
        way the switch happens at once.

        Each turn is stored in the chat it was said in, and what the user says or types from
        this call on (the moment the switch is decided and its cue plays) is said in the chat
        moved to: typed turns wait for its session, and the microphone's audio is held and
        sent to that session first (`Sender`), so the closing session never hears it. Words the
        user began before the decision stay with the chat left, as far as that session heard
        them."""
        if self.speaker is not None and self.switch_cue:
            self.speaker.overlay(self.switch_cue)  # the user is not left in silence while it happens
        self._renewal.switch(memory)

    def cite(self, sources: list[WebSource]) -> None:
        """The web pages a tool's answer came from (a look-up): kept with the model turn that
        speaks it, the one under way while the tool runs (a look-up blocks the model's turn)."""
        self.assembler.cite(sources)

    @property
    def switching(self) -> bool:
        """A switch was asked for and has not happened yet."""
        return self._renewal.switching

    def unsaved_turns(self) -> int:
        """Turns said in this conversation and not stored yet: waiting for the saver, or held for
        late transcription fragments."""
        return self.status.unsaved_turns + self.assembler.held_turns

    def idle_for(self) -> float:
        """Seconds since anyone last spoke (0 while the model answers or a tool runs)."""
        if self.assembler.model_speaking or self._tool_calls.pending:
            return 0.0
        return time.monotonic() - self.status.last_activity

    def say(self, typed: str | Turn) -> Turn:
        """A typed turn in this conversation, answered by voice; sent as soon as a session is
        open, after the answer to the typed turn before it. Takes the text, or the turn of a text
        typed earlier and not sent (`unsent`); returns the user turn it is stored as (the text
        as the store keeps it; the id says which stored turn it is)."""
        turn = Turn.of("user", typed.strip(), source="text") if isinstance(typed, str) else typed
        if not turn.text.strip():
            raise ValueError("say() needs some text")
        self._outbox.put(Text(turn))
        return turn

    def unsent(self) -> list[Turn]:
        """Typed turns not sent yet (for the caller to keep when the conversation ends)."""
        return self._outbox.unsent()

    def finish_by(self, deadline: float) -> None:
        """The owner is stopping: turns the store has not taken by `deadline` (a loop time) are
        kept locally when this closes, also if it is closing already."""
        self._saver.hurry(deadline)

    async def keep_now(self, ids: set[str], reason: str) -> list[Turn]:
        """Keep these turns, queued and not stored yet, locally now (see TurnSaver.keep_now)."""
        return await self._saver.keep_now(ids, reason)

    async def keep_held_now(self, ids: set[str]) -> list[Turn]:
        """The exchange held while the speaker plays it, if it holds one of these turns: given to
        the held file now, if it was not yet, and returned once the file's writes are done."""
        turns = self.assembler.held_with(ids)
        if turns:
            self._chat.keep_held()
            await self._saver.held_written()
        return turns
