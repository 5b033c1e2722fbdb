"""The conversation with the Gemini Live model: one websocket session at a time over
`client.aio.live.connect`, reconnected as the connection demands, with one send task and one
receive task per connection and a saver task for finished turns, all owned by `LiveConversation`
(an async context manager).

Reconnection policy:
- The newest resumable handle is kept. A new connection resumes with it while it is younger than
  `resume_handle_max_age_s`; otherwise, or after a 1007, the session starts fresh, seeded from the
  store the way the model's profile says (voice.live.profiles): the memory block in the system
  instruction, and the tail turns, with their roles, as client content before any realtime input:
  left open (turn_complete false) where a completed turn would ask for an answer (3.8, 2.5), or
  announced in the setup (`historyConfig.initialHistoryInClientContent`) and closed with
  turn_complete true, which makes no model call, where client content is only taken as the
  initial history (3.1).
- GoAway: reconnect with the handle as soon as the current turn completes, or `goaway_margin_s`
  before the deadline if the model is not speaking then. A reply is never cut by us.
- A failed connection (a close, a drop, a refused upgrade, a setup not completed within
  `live_setup_timeout_s`, a server message that is not JSON, any unexpected failure) is classified
  by voice.live.close_codes, and voice.live.reconnect decides: reconnect after a backoff, start fresh
  without what the server refused (1007), or give up with `LiveSessionFailed` and what to fix.

A server message of a type the SDK does not know is skipped (voice.live.messages.receive).

Typed turns (`say`) and other conversation text go as the profile says: a client-content user turn
(3.8, 2.5) or realtime text where client content is refused mid-session (3.1). Each typed turn is
a whole turn answered on its own: conversation text waits while the model speaks and until the
model's turn about the typed turn before it (or a BLOCKING call's result) has ended, or
`model_silence_s` passed without one; where a completed client turn interrupts the model (3.8),
also while a BLOCKING call runs (the service would cancel it). Tool answers never wait, and carry
the scheduling of their tool's behaviour.

Tool calls outlive the connection that issued them; an answer for a call an earlier connection
issued reaches the model as conversation (the server does not act on a tool response for a call
it did not issue, even on a resumed session). Model output with no turnComplete after it counts
as over after `model_silence_s`, so stray audio cannot hold a switch, a GoAway or the idle timeout.

Switching chats (`switch_to`): after the model's current turn completes, pending turns are stored
in the chat they belong to, the handle is dropped and a fresh session opens seeded from the new
chat's memory. What is typed or said once the switch is decided goes to the new session only.

Turns: an ended model turn is held `transcript_hold_s` for transcription that trails it
(voice.live.transcript says how fragments are attributed), with local detection also until the speaker
has played it (the floor may still cut it: then only what was played is stored), kept on disk
meanwhile (`SessionMemory.hold`), then its exchange goes to the turn saver (voice.live.turn_saver), so
the audio path never waits on the store. What is still unsaved when the
session closes (after `save_drain_s`, or by the owner's `finish_by`) is kept locally. Before a
fresh seed is read, the saver is drained so the seed carries every turn. When a connection drops
mid-reply, the model turn keeps all the text received (its audio still plays) and is marked
interrupted; the user's words heard before the model answered are kept open when the session
resumes (the server heard them too) and stored when it starts fresh.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import NoReturn, Self

from google import genai
from google.genai import types
from google.genai.live import AsyncSession

from parla.kernel.local_time import LocalClock
from parla.kernel.tasks import cancel_and_wait, race
from parla.records.turn import Turn, WebSource

from ..config import VoiceConfig
from ..errors import LiveSessionFailed, SetupTimeout
from ..turns.detection import turn_detection
from .close_codes import classify, failure_reason
from .latency import VoiceToVoice
from .messages import Outbox, Outgoing, Text, ToolResult, parse_seconds, receive, token_usage
from .profiles import profile_for
from .reconnect import GiveUp, ReconnectPolicy
from .send import AudioSink, AudioSource, Sender, send_seed, send_text
from .session_memory import Seed, SessionMemory
from .setup import connect_config, system_instruction
from .status import EventKind, LiveStatus, SessionEvent
from .tool_calls import Reply, ToolCalls, ToolHandler
from .transcript import TranscriptAssembler
from .turn_saver import TurnSaver

log = logging.getLogger(__name__)


@dataclass
class _Handle:
    value: str
    received_at: float


@dataclass
class LiveConversation:
    client: genai.Client
    config: VoiceConfig
    memory: SessionMemory
    tools: ToolHandler | None = None
    microphone: AudioSource | None = None
    speaker: AudioSink | None = None
    on_event: Callable[[SessionEvent], None] | None = None
    status: LiveStatus = field(default_factory=LiveStatus)
    clock: LocalClock | None = None  # None: the system clock in config.time_zone
    switch_cue: bytes | None = None  # played over whatever plays the moment a switch is decided

    def __post_init__(self) -> None:
        self._clock = self.clock or LocalClock(self.config.time_zone)
        self.assembler = TranscriptAssembler(model_variant=self.config.live_model)
        self.profile = profile_for(self.config.live_model)
        self._outbox = Outbox()
        self._tool_calls = ToolCalls(self.tools, on_done=self._outbox.wake)
        self._saver = TurnSaver(self.status, self._emit_event, self.config.save_drain_s)
        self._handle: _Handle | None = None
        self._memory_block: str | None = None  # the chat's, read with the last fresh seed
        self._reconnect = asyncio.Event()
        self._draining = False
        self._goaway_timer: asyncio.TimerHandle | None = None
        self._silence_timer: asyncio.TimerHandle | None = None
        self._hold_timer: asyncio.TimerHandle | None = None
        # A typed turn was sent, or a BLOCKING call answered, and the model's turn about it has
        # not ended yet: conversation turns wait for it (each typed turn gets its own answer).
        self._answer_due = False
        self._next_memory: SessionMemory | None = None
        self._run_task: asyncio.Task[None] | None = None

        self.latency = VoiceToVoice(self.config.latency_speech_rms, growth_ratio=self.config.latency_growth_ratio)
        self._detection = turn_detection(self.config, self.speaker)
        self._sender = Sender(
            self._outbox,
            self.microphone,
            self._detection,
            self,
            self.latency,
            switching=lambda: self.switching,
            hold_s=self.config.switch_hold_s,
        )

    # lifecycle

    async def __aenter__(self) -> Self:
        self._saver.start()
        self._run_task = asyncio.create_task(self._run(), name="live:run")
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
        self._queue_save(self.assembler.flush())
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
        self._next_memory = memory
        if self.speaker is not None and self.switch_cue:
            self.speaker.overlay(self.switch_cue)  # the user is not left in silence while it happens
        if not self.assembler.model_speaking and not self._tool_calls.pending:
            self._reconnect.set()

    def cite(self, sources: list[WebSource]) -> None:
        """The web pages a tool's answer came from (a look-up): kept with the model turn that
        speaks it, the one under way while the tool runs (a look-up blocks the model's turn)."""
        self.assembler.cite(sources)

    @property
    def switching(self) -> bool:
        """A switch was asked for and has not happened yet."""
        return self._next_memory is not None

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
            self._keep_held()
            await self._saver.held_written()
        return turns

    # turns

    def _queue_save(self, turns: list[Turn]) -> None:
        # A held exchange kept on disk and released now: that copy is forgotten once these are stored.
        forget = self.assembler.released_kept()
        if turns or forget:
            self._saver.put(self.memory, turns, forget)
        if turns:
            lines = (t.transcript_line() + (" [cut off]" if t.interrupted else "") for t in turns)
            self._emit_event(SessionEvent("turn", "\n".join(lines), tuple(turns)))

    # the connection loop

    def _emit(self, kind: EventKind, detail: str = "") -> None:
        self._emit_event(SessionEvent(kind, detail))

    def _emit_event(self, event: SessionEvent) -> None:
        if self.on_event is None:
            return
        try:
            self.on_event(event)
        except Exception:  # an observer's bug must not stop the saver or the connection loop
            log.exception("the session's event handler failed on %s", event.kind)

    def _usable_handle(self) -> str | None:
        h = self._handle
        if h is None or time.monotonic() - h.received_at > self.config.resume_handle_max_age_s:
            return None
        return h.value

    async def _fresh_seed(self, with_history: bool) -> Seed:
        # Turns still on their way to the store belong in the seed.
        self._queue_save(self.assembler.flush())
        await self._saver.drain()
        seed = await self.memory.seed()
        self._memory_block = seed.memory_block
        return seed if with_history else Seed(seed.memory_block)

    async def _run(self) -> None:
        policy = ReconnectPolicy(
            attempts=self.config.reconnect_attempts,
            delay=self.config.reconnect_delay,
            max_delay=self.config.reconnect_max_delay,
            stable_s=self.config.reconnect_stable_s,
        )
        while True:
            if self._next_memory is not None:
                await self._change_memory(self._next_memory)
            handle = self._usable_handle()
            started: float | None = None
            # A store that cannot give the seed ends the session (the caller reports it); it is
            # not a connection failure that retrying would help.
            seed = None if handle and self._memory_block is not None else await self._fresh_seed(policy.seed_history)
            seeding = seed is not None and bool(seed.history)
            assert self._memory_block is not None
            # The time is read at each connection (the Live API takes a changed setup on resumption):
            # a resumed session of hours is told the time of now; current_time covers the time between.
            instruction = system_instruction(self.config, self._memory_block, self._clock.note())
            cfg = connect_config(self.config, instruction, self._tool_calls.declarations(), handle, seeding)
            try:
                async with AsyncExitStack() as stack:
                    session = await self._connect(stack, cfg)
                    started = time.monotonic()
                    if seeding:
                        assert seed is not None
                        await send_seed(session, self.profile, seed)
                    self._connected(resumed=seed is None)
                    await self._serve(session)
                # _serve returns only when a reconnect was asked for (GoAway, restart).
                policy.ended_as_asked()
            except asyncio.CancelledError:
                raise
            except Exception as e:  # no failure of one connection may end the conversation
                failure = classify(e)
                if not failure.expected:
                    log.exception("live session failed unexpectedly", extra={"event": "live_unexpected"})
                self._disconnected(e)
                decision = policy.failed(failure, None if started is None else time.monotonic() - started)
                if isinstance(decision, GiveUp):
                    self._give_up(decision.message)
                if decision.fresh:  # whatever the handle or the seed carried was refused: never resend it
                    self._handle = None
                self._emit(
                    "reconnecting", f"attempt {decision.attempt} in {decision.delay:.1f}s after {failure.reason}"
                )
                log.warning(
                    "live session lost (%s); reconnect %d/%d in %.1fs",
                    failure.reason,
                    decision.attempt,
                    self.config.reconnect_attempts,
                    decision.delay,
                    extra={"event": "live_reconnect", "code": failure.code, "attempt": decision.attempt},
                )
                await asyncio.sleep(decision.delay)

    async def _connect(self, stack: AsyncExitStack, cfg: types.LiveConnectConfig) -> AsyncSession:
        """Open a connection; the SDK waits for setupComplete without a limit, so we set one."""
        limit = self.config.live_setup_timeout_s
        try:
            async with asyncio.timeout(limit):
                return await stack.enter_async_context(
                    self.client.aio.live.connect(model=self.config.live_model, config=cfg)
                )
        except TimeoutError:
            raise SetupTimeout(f"the Live API did not complete the setup within {limit:g}s") from None

    async def _change_memory(self, memory: SessionMemory) -> None:
        self._queue_save(self.assembler.flush())  # stored in the chat they belong to
        await self._saver.drain()
        self.memory = memory
        self._next_memory = None
        self._handle = None  # the old session's context is the old chat's
        self._memory_block = None
        self._emit("switched")

    def _connected(self, resumed: bool) -> None:
        self.status.connected = True
        self.status.last_activity = time.monotonic()
        self.status.connections += 1
        self.status.resumed += int(resumed)
        self._emit("resumed" if resumed else "connected")
        log.info(
            "live session %s",
            "resumed" if resumed else "started",
            extra={"event": "live_connected", "resumed": resumed},
        )

    def _disconnected(self, exc: BaseException) -> None:
        self.status.connected = False
        self.status.reconnects += 1
        self.status.last_error = failure_reason(exc)
        # A reply cut by the drop is stored as far as it came (its audio still plays out).
        if self.assembler.model_speaking:
            self._queue_save(self.assembler.flush())

    def _give_up(self, message: str) -> NoReturn:
        self.status.last_error = message
        self._emit("gave_up", message)
        log.error("live session ended: %s", message, extra={"event": "live_gave_up"})
        raise LiveSessionFailed(message)

    async def _serve(self, session: AsyncSession) -> None:
        self._reconnect.clear()
        self._draining = False
        sender = asyncio.create_task(self._sender.run(session, self._next_outgoing, self._send), name="live:send")
        receiver = asyncio.create_task(receive(session, self._on_message), name="live:receive")
        restart = asyncio.create_task(self._reconnect.wait(), name="live:restart")
        try:
            await race({sender, receiver, restart})
        finally:
            # Running tool calls outlive the connection: their answers go out on the next one.
            for timer in (self._goaway_timer, self._silence_timer, self._hold_timer):
                if timer is not None:
                    timer.cancel()
            self._goaway_timer = self._silence_timer = self._hold_timer = None
            self._answer_due = False
            # No late fragment of a held turn can come over another connection.
            self._queue_save(self.assembler.release())

    # sending

    def _next_outgoing(self) -> Outgoing | None:
        """The next queued item that may go now. Tools' answers go first, always (the model may
        be waiting on them); conversation turns go in order, one answer at a time: they wait
        while the model speaks, until the model's turn about the last one sent (or a BLOCKING
        call's result) has ended, while a switch is under way, and while a completed client turn
        would cut the model off."""
        # A turn that comes once a switch is decided belongs to the chat moved to: it waits for that session.
        waits = (
            self.assembler.model_speaking
            or self._answer_due
            or self._next_memory is not None
            or self._turn_would_interrupt()
        )
        return self._outbox.take(self.status.connections, waits)

    def _turn_would_interrupt(self) -> bool:
        """Whether a completed client turn now would cut the model off beyond a reply under way:
        a BLOCKING call it waits on (the service cancels that call on new input)."""
        if not (self.profile.turn_complete_interrupts and self.profile.typed_turns_via == "client_content"):
            return False
        blocking = types.Behavior.BLOCKING
        return any(self.profile.tool_behaviour(name).behavior == blocking for name in self._tool_calls.running())

    async def _send(self, session: AsyncSession, item: Outgoing) -> None:
        if isinstance(item, Text):
            await send_text(session, self.profile, item.turn.text)
            self._queue_save(self.assembler.typed(item.turn))
            self.status.last_activity = time.monotonic()
            self._answer_due = True  # until the model's turn about it ends, or it says nothing
            self._watch_silence()
        elif item.connection == self.status.connections:
            await session.send_tool_response(function_responses=self.profile.function_response(item.response))
            if self.profile.tool_behaviour(item.response.name or "").behavior == types.Behavior.BLOCKING:
                # The model speaks about the result next: a typed turn would cut that off.
                self._answer_due = True
                self._watch_silence()
        else:
            # The server does not act on an answer to a call another connection issued (even a
            # resumed one): the model hears the result as conversation instead.
            await send_text(session, self.profile, item.as_text())

    # receiving

    def _on_message(self, message: types.LiveServerMessage) -> None:
        if message.server_content is not None or message.tool_call is not None:
            self.status.last_activity = time.monotonic()
        update = message.session_resumption_update
        if update is not None and update.resumable and update.new_handle:
            self._handle = _Handle(update.new_handle, time.monotonic())
        if message.go_away is not None:
            self._on_go_away(parse_seconds(message.go_away.time_left))
        if message.tool_call is not None:
            for call in message.tool_call.function_calls or []:
                self._tool_calls.start(call, self._reply_tool(self.status.connections))
        if message.tool_call_cancellation is not None:
            self._tool_calls.cancel(message.tool_call_cancellation.ids or [])
        if message.usage_metadata is not None:  # before the content: it may end the turn it counts
            self.assembler.usage(token_usage(message.usage_metadata))
        content = message.server_content
        if content is not None:
            self._on_content(content)

    def _reply_tool(self, connection: int) -> Reply:
        async def reply(response: types.FunctionResponse) -> None:
            self._outbox.put(ToolResult(response, connection))

        return reply

    def _on_content(self, content: types.LiveServerContent) -> None:
        if content.input_transcription is not None and content.input_transcription.text:
            self.assembler.user_text(content.input_transcription.text)
            self._detection.heard(content.input_transcription.text, self)
        if content.model_turn is not None:
            for part in content.model_turn.parts or []:
                blob = part.inline_data
                if blob is not None and blob.data:
                    self._queue_save(self.assembler.model_audio(len(blob.data)))
                    ahead = self.speaker.ahead_s() if self.speaker is not None else 0.0
                    self.latency.answer_audio(time.monotonic(), ahead)
                    if self.speaker is not None:
                        self.speaker.play(blob.data)
        if content.output_transcription is not None and content.output_transcription.text:
            self.assembler.model_text(content.output_transcription.text)
        if content.interrupted:
            self._queue_save(self.assembler.interrupt(self._detection.interrupted()))
            self._model_turn_ended()
        if content.turn_complete:
            self._turn_over()
        elif self.assembler.model_speaking:
            self._watch_silence()

    def _turn_over(self) -> None:
        self._queue_save(self.assembler.complete())
        self._model_turn_ended()
        if (self._draining or self._next_memory is not None) and not self.assembler.model_speaking:
            self._reconnect.set()

    def _model_turn_ended(self) -> None:
        """The ended turn waits `transcript_hold_s` for trailing transcription before it is
        stored (longer while the speaker plays it, see `_release_held`); a conversation turn held
        back while the model spoke may go now."""
        self._answer_due = False
        if self._hold_timer is not None:
            self._hold_timer.cancel()
            self._hold_timer = None
        if self.assembler.holding:
            self._hold_for(self.config.transcript_hold_s)
        self._outbox.wake()

    def _hold_for(self, seconds: float) -> None:
        self._hold_timer = asyncio.get_running_loop().call_later(seconds, self._release_held)

    def _release_held(self) -> None:
        self._hold_timer = None
        # The answer's fate waits for the words of the sound that stopped it: if they cut it, the
        # stored turn keeps only what was played. The floor decides by the end of that sound's
        # turn at the latest (`decided`).
        if self._detection.deciding:
            self._keep_held()
            return
        # The floor may still cut what the speaker holds of the answer: the turn waits until it
        # has played, so that it keeps only what was. The connection's end releases it in any case.
        cuttable_s = self._detection.cuttable_s()
        if cuttable_s is not None:
            self._keep_held()
            self._hold_for(max(cuttable_s, self.config.transcript_hold_s))
            return
        self._queue_save(self.assembler.release())

    def _keep_held(self) -> None:
        """Held past the transcript hold, the exchange is kept on disk as it would be stored now
        (whole: better stored whole than lost if the daemon dies before it is released)."""
        turns = self.assembler.keep_held()
        if turns:
            self._saver.hold(self.memory, turns)

    @property
    def speaking(self) -> bool:
        """The model is sending its answer (for the turn detection)."""
        return self.assembler.model_speaking

    def decided(self) -> None:
        """The floor decided on the sound over the answer: a turn held for it may go."""
        if self._hold_timer is None and self.assembler.holding:
            self._release_held()

    def unheard(self, nbytes: int) -> None:
        """The floor dropped `nbytes` of the answer from the speaker."""
        if not self.assembler.unheard(nbytes):
            log.warning(
                "the user cut an answer that was stored already: it is stored as heard in full",
                extra={"event": "floor_cut_stored"},
            )

    def _watch_silence(self) -> None:
        """(Re)start the clock of the model's silence: model output with no turnComplete after it
        (stray audio after the turn ended, a lost turnComplete) must not keep the model
        "speaking" for ever, which would hold idle timeouts, switches and GoAway reconnects."""
        if self._silence_timer is not None:
            self._silence_timer.cancel()
        loop = asyncio.get_running_loop()
        self._silence_timer = loop.call_later(self.config.model_silence_s, self._model_went_silent)

    def _model_went_silent(self) -> None:
        self._silence_timer = None
        if not self.assembler.model_speaking:
            if self._answer_due:  # the model said nothing about a typed turn or a tool's result
                self._answer_due = False
                self._outbox.wake()
            return
        if self._tool_calls.pending:  # the model waits for a tool mid-turn
            self._watch_silence()
            return
        log.info(
            "no model output for %.1fs and no turnComplete: the model turn counts as over",
            self.config.model_silence_s,
            extra={"event": "live_model_silent"},
        )
        self._turn_over()

    def _on_go_away(self, time_left: float | None) -> None:
        self._emit("goaway", f"{time_left}s left" if time_left is not None else "")
        log.info("live goAway, %s s left", time_left, extra={"event": "live_goaway", "time_left": time_left})
        self._draining = True
        if not self.assembler.model_speaking and not self._tool_calls.pending:
            self._reconnect.set()
            return
        if time_left is not None:
            delay = max(0.0, time_left - self.config.goaway_margin_s)
            self._goaway_timer = asyncio.get_running_loop().call_later(delay, self._goaway_deadline)

    def _goaway_deadline(self) -> None:
        if self._draining and not self.assembler.model_speaking:
            self._reconnect.set()
