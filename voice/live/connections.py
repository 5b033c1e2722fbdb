"""The Live conversation's connections: one websocket session at a time over
`client.aio.live.connect`, with one send task and one receive task each, renewed as the
connection demands (voice.live.renewal says when, and what the next one resumes).

A session that does not resume starts fresh, seeded from the store the way the model's profile
says (voice.live.profiles): the memory block in the system instruction, and the tail turns, with
their roles, as client content before any realtime input: left open (turn_complete false) where a
completed turn would ask for an answer (3.8, 2.5), or announced in the setup
(`historyConfig.initialHistoryInClientContent`) and closed with turn_complete true, which makes no
model call, where client content is only taken as the initial history (3.1). Before a fresh seed is
read, the saver is drained so the seed carries every turn.

A failed connection (a close, a drop, a refused upgrade, a setup not completed within
`live_setup_timeout_s`, a server message that is not JSON, any unexpected failure) is classified by
voice.live.close_codes, and voice.live.reconnect decides: reconnect after a backoff, start fresh
without what the server refused (1007), or give up with `LiveSessionFailed` and what to fix. When a
connection drops mid-reply, the model turn keeps all the text received (its audio still plays) and
is marked interrupted; the user's words heard before the model answered are kept open when the
session resumes (the server heard them too) and stored when it starts fresh.

A server message of a type the SDK does not know is skipped (voice.live.messages.receive). Tool
calls outlive the connection that issued them: their answers go out on the next one.

Switching chats: after the model's current turn completes, pending turns are stored in the chat
they belong to, and a fresh session opens seeded from the new chat's memory.

The tools are read for each connection's setup; while it is open, a change of them (an MCP server's
came or went) asks the renewal for a new connection with the tools of now (voice.live.renewal
says when)."""

from __future__ import annotations

import asyncio
import logging
import time
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import NoReturn

from google import genai
from google.genai import types
from google.genai.live import AsyncSession

from parla.kernel.local_time import LocalClock
from parla.kernel.tasks import race

from ..config import VoiceConfig
from ..errors import LiveSessionFailed, SetupTimeout
from .chat_turns import ChatTurns
from .close_codes import classify, failure_reason
from .delivery import Delivery
from .messages import Outbox, ToolResult, parse_seconds, receive, token_usage
from .model_turn import ModelTurn
from .profiles import LiveProfile
from .reconnect import GiveUp, ReconnectPolicy
from .renewal import Renewal
from .send import Sender, send_seed
from .session_memory import Seed, SessionMemory
from .setup import connect_config, system_instruction
from .status import Events, LiveStatus
from .tool_calls import Reply, ToolCalls

log = logging.getLogger(__name__)


@dataclass
class Connections:
    client: genai.Client
    config: VoiceConfig
    clock: LocalClock
    profile: LiveProfile
    status: LiveStatus
    events: Events
    chat: ChatTurns
    renewal: Renewal
    model_turn: ModelTurn
    sender: Sender
    delivery: Delivery
    outbox: Outbox
    tool_calls: ToolCalls
    _memory_block: str | None = None  # the chat's, read with the last fresh seed

    async def run(self) -> None:
        """Until cancelled, or until it gives up (LiveSessionFailed)."""
        policy = ReconnectPolicy(
            attempts=self.config.reconnect_attempts,
            delay=self.config.reconnect_delay,
            max_delay=self.config.reconnect_max_delay,
            stable_s=self.config.reconnect_stable_s,
        )
        while True:
            if self.renewal.next_memory is not None:
                await self._change_memory(self.renewal.next_memory)
            handle = self.renewal.usable_handle()
            started: float | None = None
            # A store that cannot give the seed ends the session (the caller reports it); it is
            # not a connection failure that retrying would help.
            seed = None if handle and self._memory_block is not None else await self._fresh_seed(policy.seed_history)
            seeding = seed is not None and bool(seed.history)
            assert self._memory_block is not None
            # The time is read at each connection (the Live API takes a changed setup on resumption):
            # a resumed session of hours is told the time of now; current_time covers the time between.
            instruction = system_instruction(self.config, self._memory_block, self.clock.note())
            declarations = self.tool_calls.declarations()
            cfg = connect_config(self.config, instruction, declarations, handle, seeding)
            try:
                async with AsyncExitStack() as stack:
                    session = await self._connect(stack, cfg)
                    started = time.monotonic()
                    if seeding:
                        assert seed is not None
                        await send_seed(session, self.profile, seed)
                    self._connected(resumed=seed is None)
                    await self._serve(session, frozenset(d.name or "" for d in declarations))
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
                    self.renewal.forget_handle()
                self.events.emit(
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

    async def _fresh_seed(self, with_history: bool) -> Seed:
        await self.chat.flush()  # turns still on their way to the store belong in the seed
        seed = await self.chat.memory.seed()
        self._memory_block = seed.memory_block
        return seed if with_history else Seed(seed.memory_block)

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
        await self.chat.flush()  # stored in the chat they belong to
        self.chat.memory = memory
        self.renewal.switched()
        self._memory_block = None
        self.events.emit("switched")

    def _connected(self, resumed: bool) -> None:
        self.status.connected = True
        self.status.last_activity = time.monotonic()
        self.status.connections += 1
        self.status.resumed += int(resumed)
        self.events.emit("resumed" if resumed else "connected")
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
        if self.model_turn.speaking:
            self.chat.store(self.chat.assembler.flush())

    def _give_up(self, message: str) -> NoReturn:
        self.status.last_error = message
        self.events.emit("gave_up", message)
        log.error("live session ended: %s", message, extra={"event": "live_gave_up"})
        raise LiveSessionFailed(message)

    async def _serve(self, session: AsyncSession, declared: frozenset[str]) -> None:
        self.renewal.opened()
        self.status.declared = declared
        sender = asyncio.create_task(self.sender.run(session, self.delivery.next, self.delivery.send), name="live:send")
        receiver = asyncio.create_task(receive(session, self._on_message), name="live:receive")
        restart = asyncio.create_task(self.renewal.wait(), name="live:restart")
        tools = asyncio.create_task(self._watch_tools(declared), name="live:tools")
        try:
            await race({sender, receiver, restart, tools})
        finally:
            # Running tool calls outlive the connection: their answers go out on the next one.
            self.renewal.closed()
            self.model_turn.connection_ended()

    async def _watch_tools(self, declared: frozenset[str]) -> None:
        """Tells the renewal once the tools differ from those this connection declared; ends when
        the renewal asks for the next connection."""
        while (now := self.tool_calls.names()) == declared:
            await self.tool_calls.changed()
        log.info(
            "the tools changed (%s); the session is renewed with them at the next turn boundary",
            ", ".join([f"+{n}" for n in sorted(now - declared)] + [f"-{n}" for n in sorted(declared - now)]),
            extra={"event": "live_tools_changed"},
        )
        self.renewal.tools_changed()
        await self.renewal.wait()

    def _on_message(self, message: types.LiveServerMessage) -> None:
        if message.server_content is not None or message.tool_call is not None:
            self.status.last_activity = time.monotonic()
        update = message.session_resumption_update
        if update is not None and update.resumable and update.new_handle:
            self.renewal.resumable(update.new_handle)
        if message.go_away is not None:
            self.renewal.go_away(parse_seconds(message.go_away.time_left))
        if message.tool_call is not None:
            for call in message.tool_call.function_calls or []:
                self.tool_calls.start(call, self._reply_tool(self.status.connections))
        if message.tool_call_cancellation is not None:
            self.tool_calls.cancel(message.tool_call_cancellation.ids or [])
        if message.usage_metadata is not None:  # before the content: it may end the turn it counts
            self.chat.assembler.usage(token_usage(message.usage_metadata))
        content = message.server_content
        if content is not None:
            self.model_turn.content(content)

    def _reply_tool(self, connection: int) -> Reply:
        async def reply(response: types.FunctionResponse) -> None:
            self.outbox.put(ToolResult(response, connection))

        return reply
