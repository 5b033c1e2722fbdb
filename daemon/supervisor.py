"""`parla run`: the daemon. One supervisor (`Daemon.run`) owns every long-lived task: the control
socket, the microphone and speaker, the compaction worker, the store (and its outbox replay), and
at most one live session at a time.

States:
- idle: the microphone is heard only here, by the offline wake-phrase spotter (activation `wake`,
  in larger blocks, and only what a cheap energy gate passes is decoded), or not at all
  (`push_to_talk`, or muted: the microphone stream is closed); the speaker stream is closed.
  Nothing leaves the machine.
- active: a live session is open in the current chat. It closes after `idle_timeout` with nobody
  speaking (not in `always_on`), on `parla stop`, or when the Live API gives up; the daemon then
  goes back to idle and the next activation continues the same chat.
A short cue plays when a session opens and when it closes (`cues`).

Shutdown (`stop()`, SIGINT/SIGTERM in `parla run`): listening stops, the open session ends (a reply
under way is cut and stored as far as it came), pending turns are stored and the store's outbox is
flushed, all within `shutdown_timeout_s`. The store is waited for until `shutdown_keep_s` before
that deadline; what it has not taken by then (it is locked by another program, say) is kept in the
local keep-aside file (memory.store.refused), counted in `status.kept_turns`, and replayed into the
store when the daemon next starts.

The control commands: daemon.commands; typed turns (`say`): daemon.typed_turns; the `status`
answer: daemon.daemon_status.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager, nullcontext, suppress

from google import genai

from parla.kernel.errors import ParlaError
from parla.kernel.local_time import LocalClock
from parla.kernel.tasks import cancel_and_wait, race
from parla.memory.errors import StoreError, StoreOffline
from parla.memory.store.protocol import ChatRecords, StoreState
from parla.memory.store.refused import RefusedTurns
from parla.records.reminder import Reminder
from parla.records.turn import Turn
from parla.tools.mcp.tools import McpTools
from parla.ui.app import Inspector
from parla.ui.live import LiveFeed, LiveState
from parla.ui.server import Serving, serve_inspector
from parla.ui.token import load_token
from parla.voice.audio.cues import cue
from parla.voice.audio.gated_microphone import GatedMicrophone
from parla.voice.audio.wake import WakePhrase
from parla.voice.errors import LiveSessionFailed
from parla.voice.live.conversation import LiveConversation, SessionEvent
from parla.voice.live.latency import LatencyDay, one_line

from .commands import Running, WaitingTalks, dispatch
from .control import ControlServer
from .conversation import CurrentChat, VoiceServices, live_conversation, mcp_tools_started, voice_services
from .daemon_status import DaemonStatus
from .heap import settled_heap
from .memory_services import MemoryServices
from .model_tools import chat_tools
from .reminders import ReminderScheduler, reminder_speech, say_aloud
from .start_chat import Why
from .typed_turns import TypedTurns

log = logging.getLogger(__name__)

# How often an open session checks for silence (the timeout itself is a setting).
_IDLE_POLL_S = 0.25
# After an unexpected failure the loop goes on after 1 s, doubling per failure in a row up to a
# minute; failures further apart than five minutes start the count again.
_RESTART_DELAY_S = 1.0
_RESTART_MAX_DELAY_S = 60.0
_CRASH_RESET_S = 300.0


class Daemon:
    def __init__(
        self, mem: MemoryServices, chat_id: str, client: genai.Client | None = None, why: Why = "talked"
    ) -> None:
        self.mem = mem
        self.settings = mem.settings
        self.client = client
        self.status = DaemonStatus()
        self._latency_day = LatencyDay()  # voice-to-voice times of today's finished sessions
        self._chat_id = chat_id
        self._why = why  # how the user came to the chat it starts in (daemon.start_chat)
        self._stop = asyncio.Event()
        self._activate = asyncio.Event()
        self._deadline: float | None = None  # loop time the shutdown must be over by
        self._typed = TypedTurns(
            mem.store, mem.refused, mem.held, self.status, lambda: self._conversation, self._activate
        )
        self._talks = WaitingTalks()
        self._current: CurrentChat | None = None
        self._running: Running | None = None  # what the control commands act on, once they can
        self._voice: VoiceServices | None = None
        self._gate: GatedMicrophone | None = None
        self._wake: WakePhrase | None = None
        self._conversation: LiveConversation | None = None
        self._session_failed = False
        self._crashes = 0  # unexpected failures in a row
        self._last_crash = 0.0
        self.ready = asyncio.Event()  # set once the socket listens and the devices are open
        # the memory inspector's live page: the state below and each stored turn
        self.feed = LiveFeed(self._live_state)
        self.inspector: Serving | None = None
        self._inspector_problem: str | None = None
        self.reminders: ReminderScheduler | None = None

    # lifecycle

    def stop(self) -> None:
        if self._deadline is None:
            self._deadline = asyncio.get_running_loop().time() + self.settings.shutdown_timeout_s
        if self._conversation is not None:  # it may be closing already, waiting for the store
            self._conversation.finish_by(self._deadline - self.settings.shutdown_keep_s)
        self._stop.set()

    def _store_deadline(self) -> float | None:
        """Stopping: when the store stops being waited for (then turns are kept aside)."""
        return None if self._deadline is None else self._deadline - self.settings.shutdown_keep_s

    async def serve(self) -> None:
        """Run until stopped; the shutdown after a stop is bounded by `shutdown_timeout_s`."""
        task = asyncio.create_task(self._run(), name="daemon")
        stopped = asyncio.create_task(self._stop.wait(), name="daemon:stopped")
        try:
            await asyncio.wait({task, stopped}, return_when=asyncio.FIRST_COMPLETED)
            if not task.done():
                assert self._deadline is not None
                limit = self.settings.shutdown_timeout_s
                try:
                    async with asyncio.timeout_at(self._deadline):
                        await asyncio.shield(task)
                except TimeoutError:
                    log.error("shutdown took longer than %.0fs; cancelling", limit, extra={"event": "shutdown_slow"})
                    await cancel_and_wait(task)
            if not task.cancelled():
                task.result()  # its error, if it failed
        finally:
            await cancel_and_wait(stopped, task)

    async def _run(self) -> None:
        s = self.settings
        if s.activation == "wake":
            self._wake = WakePhrase(s.wake_phrase, s.wake_threshold)  # a bad phrase fails before anything opens
        live_client = self.client or self.mem.client  # no key: fails here with how to set one
        await replay_kept(self.mem.store, self.mem.refused, self.mem.held)
        async with (
            self.mem.reembedder,
            self.mem.summary_worker,
            self.mem.copy_fill or nullcontext(),
            ControlServer(
                s.control_socket,
                lambda cmd, request: dispatch(self._running, cmd, request),
                s.control_request_timeout_s,
            ),
            voice_services(self.mem) as voice,
        ):
            self._voice = voice
            self._gate = GatedMicrophone(voice.microphone)
            self._current = CurrentChat(
                self.mem, voice.worker, self._chat_id, on_stored=self.feed.turns_stored, why=self._why
            )
            self._running = self._for_commands(self._current, self._gate, voice.mcp)
            # the commands are answered from here on, also while the inspector starts
            async with self._serve_inspector(), self._reminder_scheduler() as self.reminders, settled_heap():
                log.info("daemon ready (%s)", s.activation, extra={"event": "daemon_ready", "activation": s.activation})
                self.ready.set()
                try:
                    while not self._stop.is_set():
                        self.status.state = "idle"
                        try:
                            if not await self._wait_for_activation():
                                break
                            await self._session(live_client)
                        except Exception as e:  # noqa: BLE001 - no failure of listening or of a session ends the daemon
                            await self._restart_after(e)
                finally:
                    self.status.state = "stopping"
                    log.info("daemon stopping", extra={"event": "daemon_stopping"})
                    await self._store_typed("the daemon stopped before a session could send it")
        await flush_outbox(self.mem.store)

    def _for_commands(self, current: CurrentChat, gate: GatedMicrophone, mcp: McpTools) -> Running:
        """The daemon as the control commands (daemon.commands) see it."""
        return Running(
            mem=self.mem,
            status=self.status,
            gate=gate,
            current=current,
            chats=chat_tools(self.mem, current),
            typed=self._typed,
            talks=self._talks,
            activate=self._activate,
            latency_day=self._latency_day,
            conversation=lambda: self._conversation,
            mcp=mcp,
            inspector=lambda: self.inspector or self._inspector_problem or "the memory inspector is not running",
            reminders_said=lambda: self.reminders.said if self.reminders is not None else 0,
            stop=self.stop,
        )

    @asynccontextmanager
    async def _serve_inspector(self) -> AsyncIterator[None]:
        """The memory inspector on 127.0.0.1 while the daemon runs. A daemon whose inspector
        cannot start (its port taken) runs without it and says why (`parla ui` too)."""
        if not self.settings.ui:
            self._inspector_problem = "the daemon does not serve the inspector (PARLA_UI=false)"
            yield
            return
        s = self.settings
        async with AsyncExitStack() as stack:
            try:
                token = await asyncio.to_thread(load_token, s.ui_token_file)
                inspector = Inspector(self.mem, token, self.feed, self._daemon_chat, LocalClock(s.time_zone))
                serving = serve_inspector(inspector, s.ui_port, s.ui_max_connections, s.ui_request_timeout_s)
                self.inspector = await stack.enter_async_context(serving)
                # the address without its token: this line reaches the journal
                log.info("memory inspector on %s", self.inspector.address, extra={"event": "ui_ready"})
            except ParlaError as e:
                self._inspector_problem = str(e)
                log.warning("%s", e, extra={"event": "ui_unavailable"})
            try:
                yield
            finally:
                self.inspector = None

    def _reminder_scheduler(self) -> ReminderScheduler:
        s = self.settings
        speech = reminder_speech(s, lambda: self.client or self.mem.client)

        async def say(_: Reminder, words: str) -> None:
            assert self._voice is not None
            await say_aloud(self._voice.speaker, words, speech, lambda: self.status.state == "active")

        return ReminderScheduler(
            self.mem.store,
            s.device_name,
            say,
            self.mem.reminder_wake,
            handoff_s=s.reminder_handoff_s,
            takeover_s=s.reminder_takeover_s,
            recheck_s=s.reminder_recheck_s,
            clock=LocalClock(s.time_zone),
        )

    def _live_state(self) -> LiveState:
        chat_id = self._current.chat_id if self._current is not None else self._chat_id
        session = self._conversation.latency.turns if self._conversation is not None else ()
        timed = one_line(session, self._latency_day.today(session))
        return LiveState(self.status.state, self._gate.muted if self._gate is not None else False, chat_id, timed)

    async def _daemon_chat(self) -> str | None:
        return self._live_state().chat_id

    async def _restart_after(self, exc: Exception) -> None:
        """Listening or a session died of something unexpected (a bug, a broken store file):
        say so with the traceback, then carry on after a delay that doubles with each failure in
        a row (up to a minute), so a failure that repeats at once never spins."""
        now = time.monotonic()
        if now - self._last_crash > _CRASH_RESET_S:
            self._crashes = 0
        self._crashes += 1
        self._last_crash = now
        self.status.restarts += 1
        self.status.state = "idle"
        self.status.last_error = f"{type(exc).__name__}: {exc}"
        delay = min(_RESTART_DELAY_S * 2 ** (self._crashes - 1), _RESTART_MAX_DELAY_S)
        log.error(
            "the daemon's loop failed (%s); going on in %.0fs",
            self.status.last_error,
            delay,
            exc_info=exc,
            extra={"event": "daemon_restart", "restarts": self.status.restarts},
        )
        with suppress(TimeoutError):
            async with asyncio.timeout(delay):
                await self._stop.wait()

    # idle

    async def _wait_for_activation(self) -> bool:
        """Until something opens a session (True) or the daemon stops (False)."""
        always_on = self.settings.activation == "always_on"
        if (always_on and not self._session_failed) or self._activate.is_set():
            self._activate.clear()
            return not self._stop.is_set()
        await self._idle_audio()
        # After a failed session, always-on waits before trying again (a refused key fails at once).
        retry_in = self.settings.reconnect_max_delay if always_on else None
        waiters = {
            asyncio.create_task(self._stop.wait(), name="idle:stop"),
            asyncio.create_task(self._activate.wait(), name="idle:activate"),
        }
        waiters.add(asyncio.create_task(self._listen(), name="idle:listen"))
        await race(waiters, timeout=retry_in)
        self._activate.clear()
        return not self._stop.is_set()

    async def _idle_audio(self) -> None:
        """Idle costs next to nothing: the speaker closes once its last cue is played, and the
        microphone stays open (in larger blocks) only for the wake phrase."""
        assert self._voice is not None and self._gate is not None
        await self._voice.speaker.drained(1.0)
        self._voice.speaker.close()
        self._gate.listen(self.settings.idle_block_ms if self._wake is not None else None)

    async def _listen(self) -> None:
        """Hear the microphone locally until the wake phrase. Without one the stream is closed and
        nothing arrives; a session opened by `parla talk` starts with fresh audio."""
        assert self._gate is not None
        if self._wake is not None:
            self._wake.reset()
        while True:
            block = await self._gate.read()
            if self._wake is not None and self._wake.heard(block):
                self.status.wake_detections += 1
                log.info("wake phrase heard", extra={"event": "wake"})
                return

    # active

    async def _session(self, client: genai.Client) -> None:
        assert self._current is not None and self._voice is not None and self._gate is not None
        s = self.settings
        self.status.state = "active"
        self._session_failed = False
        # the MCP servers still starting (the daemon just began) bring their tools to this session
        if not await mcp_tools_started(self._voice.mcp, s.mcp_start_wait_s, self._stop):
            return  # stopped meanwhile
        self.status.session_started = time.monotonic()
        self.status.sessions += 1
        self._voice.speaker.open()
        self._gate.listen(s.audio_block_ms)
        if s.cues:
            self._voice.speaker.play(cue(rising=True))
        conversation = live_conversation(
            client, self._current, self._gate, self._voice.speaker, self._on_event, self._voice.mcp
        )
        try:
            async with conversation:
                self._conversation = self._current.conversation = conversation
                if (deadline := self._store_deadline()) is not None:
                    conversation.finish_by(deadline)
                for turn in self._typed.pending:
                    conversation.say(turn)
                self._typed.pending.clear()
                await self._until_session_ends(conversation)
        except (LiveSessionFailed, StoreError) as e:
            # The daemon outlives a session that cannot go on (Live API gave up, the chat's
            # memory cannot be loaded): back to idle, with the reason in `parla status`. Any
            # other failure reaches the loop in `_run`, which logs it and goes on after a delay.
            self.status.last_error = str(e)
            self._session_failed = True
            self._talks.settle({"result": "failed", "error": str(e)})
            log.error("session ended: %s", e, extra={"event": "session_failed"})
        finally:
            # typed turns that never went out (some came while the session closed) open the next
            # session instead of being lost
            self._typed.pending[:0] = conversation.unsent()
            if self._session_failed:
                await self._store_typed(self.status.last_error or "the session failed")
            elif self._typed.pending:
                self._activate.set()
            self._conversation = self._current.conversation = None
            self._latency_day.add(conversation.latency.turns)
            self.status.session_started = None
            if s.cues and not self._stop.is_set():
                self._voice.speaker.play(cue(rising=False))
            log.info("session closed", extra={"event": "session_closed", "chat_id": self._current.chat_id})

    async def _until_session_ends(self, conversation: LiveConversation) -> None:
        failed = asyncio.create_task(conversation.wait(), name="session:live")
        stopping = asyncio.create_task(self._stop.wait(), name="session:stop")
        try:
            while True:
                done, _ = await asyncio.wait({failed, stopping}, timeout=_IDLE_POLL_S)
                if failed in done:
                    failed.result()  # raises LiveSessionFailed
                if stopping in done:
                    return
                timeout = self.settings.idle_timeout
                if self.settings.activation != "always_on" and conversation.idle_for() >= timeout:
                    log.info("no one spoke for %.0fs: closing the session", timeout, extra={"event": "idle_timeout"})
                    return
        finally:
            await cancel_and_wait(failed, stopping)

    async def _store_typed(self, reason: str) -> None:
        assert self._current is not None
        await self._typed.store_unsent(self._current.chat_id, self._store_deadline(), reason)

    def _on_event(self, event: SessionEvent) -> None:
        if event.kind in ("turn", "stored", "kept"):
            self._typed.follow(event)
        if event.kind == "kept":
            self.status.kept_turns += len(event.turns)
        if event.kind == "lost":
            self.status.lost_turns += len(event.turns)
        if event.kind in ("connected", "resumed"):
            self._talks.settle({"result": "listening"})
        if event.kind in ("gave_up", "save_failed", "save_refused", "reconnecting"):
            self.status.last_error = f"{event.kind}: {event.detail}"
        if event.kind in ("turn", "stored"):  # transcripts stay out of the logs at info level
            log.debug("%s %s", event.kind, event.detail)
        else:
            log.info("live %s %s", event.kind, event.detail, extra={"event": f"live_{event.kind}"})


async def replay_kept(store: ChatRecords, refused: RefusedTurns, held: RefusedTurns) -> None:
    """Turns kept aside by an earlier run (not stored in time) go into the store first, then
    the answer it held back from the store while the speaker played it, if it was killed
    meanwhile (whole: what was heard of it is not known)."""
    added = 0

    async def append(chat_id: str, turns: list[Turn]) -> None:
        nonlocal added
        with suppress(StoreOffline):  # the remote store's outbox holds them now, and sends them
            added += (await store.append_turns(chat_id, turns)).added

    # The held answer's replay says so even when all went in: the daemon died while it played.
    files = (
        (refused, "kept", logging.INFO, "the kept turns in %s could not be read: %s"),
        (held, "held", logging.WARNING, "the held turns in %s could not be read: %s"),
    )
    for kept, what, level, unreadable in files:
        added = 0
        try:
            replayed = await kept.replay(append)
        except (OSError, ValueError) as e:  # an unreadable file stays for `parla doctor`; the daemon runs
            log.error(unreadable, kept.path, e)
            continue
        if replayed.stored or replayed.left:
            log.log(
                logging.WARNING if replayed.left else level,
                "%d %s turns stored (%d new); %d still kept in %s%s",
                replayed.stored,
                what,
                added,
                replayed.left,
                kept.path,
                f" ({replayed.error})" if replayed.error else "",
                extra={"event": f"{what}_replayed", "stored": replayed.stored, "left": replayed.left},
            )


async def flush_outbox(store: StoreState) -> None:
    """Send what the remote store's outbox holds; what cannot go now is sent on the next start."""
    try:
        await store.flush()
    except StoreError as e:
        log.warning("outbox not flushed (%s); it is sent when Parla next starts", e, extra={"event": "outbox_kept"})
