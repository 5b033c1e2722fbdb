"""What the conversation sends when, besides the microphone's audio: typed turns and tools' answers
(voice.live.messages queues them).

Typed turns (`say`) and other conversation text go as the profile says: a client-content user turn
(3.8, 2.5) or realtime text where client content is refused mid-session (3.1). Each typed turn is
a whole turn answered on its own: conversation text waits while the model speaks and until the
model's turn about the typed turn before it (or a BLOCKING call's result) has ended, or
`model_silence_s` passed without one; where a completed client turn interrupts the model (3.8),
also while a BLOCKING call runs (the service would cancel it); and once a switch is decided, for
the session of the chat moved to. Tool answers never wait, and carry the scheduling of their
tool's behaviour.

Tool calls outlive the connection that issued them; an answer for a call an earlier connection
issued reaches the model as conversation (the server does not act on a tool response for a call
it did not issue, even on a resumed session)."""

from __future__ import annotations

import time
from dataclasses import dataclass

from google.genai import types
from google.genai.live import AsyncSession

from .chat_turns import ChatTurns
from .messages import Outbox, Outgoing, Text
from .model_turn import ModelTurn
from .profiles import LiveProfile
from .renewal import Renewal
from .send import send_text
from .status import LiveStatus
from .tool_calls import ToolCalls


@dataclass
class Delivery:
    profile: LiveProfile
    outbox: Outbox
    chat: ChatTurns
    model_turn: ModelTurn
    tool_calls: ToolCalls
    renewal: Renewal
    status: LiveStatus

    def next(self) -> Outgoing | None:
        """The next queued item that may go now. Tools' answers go first, always (the model may
        be waiting on them); conversation turns go in order, one answer at a time: they wait
        while the model speaks, until the model's turn about the last one sent (or a BLOCKING
        call's result) has ended, while a switch is under way, and while a completed client turn
        would cut the model off."""
        # A turn that comes once a switch is decided belongs to the chat moved to: it waits for that session.
        waits = (
            self.model_turn.speaking
            or self.model_turn.answer_due
            or self.renewal.switching
            or self._turn_would_interrupt()
        )
        return self.outbox.take(self.status.connections, waits)

    async def send(self, session: AsyncSession, item: Outgoing) -> None:
        if isinstance(item, Text):
            await send_text(session, self.profile, item.turn.text)
            self.chat.store(self.chat.assembler.typed(item.turn))
            self.status.last_activity = time.monotonic()
            self.model_turn.expect_answer()  # until the model's turn about it ends, or it says nothing
        elif item.connection == self.status.connections:
            await session.send_tool_response(function_responses=self.profile.function_response(item.response))
            if self.profile.tool_behaviour(item.response.name or "").behavior == types.Behavior.BLOCKING:
                # The model speaks about the result next: a typed turn would cut that off.
                self.model_turn.expect_answer()
        else:
            # The server does not act on an answer to a call another connection issued (even a
            # resumed one): the model hears the result as conversation instead.
            await send_text(session, self.profile, item.as_text())

    def _turn_would_interrupt(self) -> bool:
        """Whether a completed client turn now would cut the model off beyond a reply under way:
        a BLOCKING call it waits on (the service cancels that call on new input)."""
        if not (self.profile.turn_complete_interrupts and self.profile.typed_turns_via == "client_content"):
            return False
        blocking = types.Behavior.BLOCKING
        return any(self.profile.tool_behaviour(name).behavior == blocking for name in self.tool_calls.running())
