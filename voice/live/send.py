"""What goes onto a Live session, in the form the model's profile asks for: microphone audio, the
seed's tail turns, and a user turn in words; and the send side of the conversation (`Sender`)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol

from google.genai import types
from google.genai.live import AsyncSession

from parla.kernel.tasks import cancel_and_wait

from ..config import MIC_RATE, SAMPLE_BYTES
from ..turns.detection import Answer, TurnDetection
from .latency import VoiceToVoice
from .messages import Outbox, Outgoing
from .profiles import LiveProfile
from .session_memory import Seed

log = logging.getLogger(__name__)

MIC_MIME = f"audio/pcm;rate={MIC_RATE}"
BYTES_PER_S = MIC_RATE * SAMPLE_BYTES  # of microphone audio


async def send_audio(session: AsyncSession, block: bytes) -> None:
    await session.send_realtime_input(audio=types.Blob(data=block, mime_type=MIC_MIME))


async def send_seed(session: AsyncSession, profile: LiveProfile, seed: Seed) -> None:
    """The tail turns, with their roles, before any realtime input: left open where a completed
    turn would ask for an answer, closed where it ends the initial history."""
    history: list[types.Content | types.ContentDict] = [
        types.Content(role=t.role, parts=[types.Part(text=t.text)]) for t in seed.history
    ]
    await session.send_client_content(turns=history, turn_complete=profile.seed_turn_complete)


async def send_text(session: AsyncSession, profile: LiveProfile, text: str) -> None:
    """A user turn in words, the way the model takes one mid-session."""
    if profile.typed_turns_via == "client_content":
        turn = types.Content(role="user", parts=[types.Part(text=text)])
        await session.send_client_content(turns=turn, turn_complete=True)
    else:
        await session.send_realtime_input(text=text)


class AudioSource(Protocol):
    async def read(self) -> bytes: ...


class AudioSink(Protocol):
    def play(self, pcm: bytes) -> None: ...
    def flush(self) -> int: ...
    def ahead_s(self) -> float: ...
    def queued(self) -> bool: ...
    def overlay(self, pcm: bytes) -> None: ...
    def pause(self) -> None: ...
    def resume(self) -> None: ...


class SessionInput:
    """The session's realtime input, where the turn detection sends the user's audio and turns."""

    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def audio(self, block: bytes) -> None:
        await send_audio(self.session, block)

    async def activity_start(self) -> None:
        await self.session.send_realtime_input(activity_start=types.ActivityStart())

    async def activity_end(self) -> None:
        await self.session.send_realtime_input(activity_end=types.ActivityEnd())


@dataclass
class Sender:
    """The send side of the conversation, one connection at a time: what the conversation queues
    (`outbox`), which goes first, and the microphone's blocks, through the turn detection
    (`detection`: the service's, or the local floor, which marks the user's turns and pauses the
    speaker for a sound over the `answer` until it proves to be speech). A block read when a
    connection ends, and the user's turn still open then, go first on the next connection.

    While `switching()` says a switch to another chat was decided, the blocks read are held, not
    sent: they were said in the chat moved to, so the session about to close must not hear them
    (it would transcribe, even answer, them in the chat left). They go first on the next
    connection, which is the new chat's, with the time each was read. At most `hold_s` of audio
    is held; beyond it the oldest goes, and the log says how much when the rest is sent."""

    outbox: Outbox
    microphone: AudioSource | None
    detection: TurnDetection
    answer: Answer
    latency: VoiceToVoice
    switching: Callable[[], bool] = lambda: False
    hold_s: float = 30.0
    _unsent: deque[tuple[bytes, float]] = field(default_factory=deque)  # (block, read at), oldest first
    _unsent_bytes: int = 0
    _dropped_bytes: int = 0

    async def run(
        self,
        session: AsyncSession,
        next_item: Callable[[], Outgoing | None],
        deliver: Callable[[AsyncSession, Outgoing], Awaitable[None]],
    ) -> None:
        """Until cancelled or a send fails: `next_item` says what queued item may go now,
        `deliver` sends it. An item whose sending fails is queued first again."""
        mic_read: asyncio.Task[bytes] | None = None
        control: asyncio.Task[bool] | None = None
        realtime = SessionInput(session)
        try:
            await self.detection.opened(realtime)
            await self._send_unsent(realtime)
            while True:
                while (item := next_item()) is not None:
                    try:
                        await deliver(session, item)
                    except BaseException:
                        self.outbox.put(item, first=True)  # sent on the next connection
                        raise
                self.outbox.ready.clear()
                if self.microphone is not None and mic_read is None:
                    mic_read = asyncio.create_task(self.microphone.read())
                if control is None:  # one waiter until it fires, not one per audio block
                    control = asyncio.create_task(self.outbox.ready.wait())
                waiting = {control} | ({mic_read} if mic_read else set())
                done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
                if control in done:
                    control = None
                if mic_read is not None and mic_read in done:
                    self._keep(mic_read.result())
                    mic_read = None
                    await self._send_unsent(realtime)
        finally:
            if mic_read is not None and mic_read.done() and not mic_read.cancelled():
                self._keep(mic_read.result())
            await cancel_and_wait(mic_read, control)

    @property
    def unsent_s(self) -> float:
        """Seconds of microphone audio read and not sent yet."""
        return self._unsent_bytes / BYTES_PER_S

    def _keep(self, block: bytes) -> None:
        self._unsent.append((block, time.monotonic()))
        self._unsent_bytes += len(block)
        limit = self.hold_s * BYTES_PER_S
        while self._unsent_bytes > limit and len(self._unsent) > 1:
            dropped, _ = self._unsent.popleft()
            self._unsent_bytes -= len(dropped)
            self._dropped_bytes += len(dropped)

    async def _send_unsent(self, realtime: SessionInput) -> None:
        """Every block read and not sent, oldest first, unless a switch holds them; a block
        leaves the queue once it is on the websocket."""
        if self.switching():
            return
        if self._dropped_bytes:
            log.warning(
                "a switch took longer than %g s: the first %.1f s said during it were dropped",
                self.hold_s,
                self._dropped_bytes / BYTES_PER_S,
                extra={"event": "switch_audio_dropped"},
            )
            self._dropped_bytes = 0
        while self._unsent:
            block, read_at = self._unsent[0]
            await self.detection.feed(block, self.answer, realtime)
            self._unsent.popleft()
            self._unsent_bytes -= len(block)
            self.latency.sent(block, read_at, time.monotonic())
