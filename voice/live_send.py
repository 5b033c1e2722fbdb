"""What goes onto a Live session, in the form the model's profile asks for: microphone audio, the
seed's tail turns, and a user turn in words; and the send side of the conversation (`Sender`)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from google.genai import types
from google.genai.live import AsyncSession

from parla.memory.tasks import cancel_and_wait
from parla.voice.config import MIC_RATE
from parla.voice.floor import Floor, Marker
from parla.voice.latency import VoiceToVoice
from parla.voice.live_messages import Outbox, Outgoing
from parla.voice.profiles import LiveProfile
from parla.voice.session_memory import Seed

MIC_MIME = f"audio/pcm;rate={MIC_RATE}"


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
    def overlay(self, pcm: bytes) -> None: ...
    def pause(self) -> None: ...
    def resume(self) -> None: ...


@dataclass
class Sender:
    """The send side of the conversation, one connection at a time: what the conversation queues
    (`outbox`), which goes first, and the microphone's blocks, as they are or through the local
    floor detector (`floor`), which marks the user's turns and pauses the speaker for a sound over
    the answer until it proves to be speech. A block read when a connection ends, and the user's
    turn still open then, go first on the next connection."""

    outbox: Outbox
    microphone: AudioSource | None
    speaker: AudioSink | None
    floor: Floor | None
    latency: VoiceToVoice
    model_speaking: Callable[[], bool]
    _held_block: bytes | None = None

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
        try:
            if self.floor is not None and self.floor.talking:  # the user was talking when the last one ended
                await session.send_realtime_input(activity_start=types.ActivityStart())
            if self._held_block is not None:
                await self._send_audio(session, self._held_block)
                self._held_block = None
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
                    block = mic_read.result()
                    mic_read = None
                    self._held_block = block
                    read_at = time.monotonic()
                    await self._send_audio(session, block)
                    self.latency.sent(block, read_at, time.monotonic())
                    self._held_block = None
        finally:
            if mic_read is not None and mic_read.done() and not mic_read.cancelled():
                self._held_block = mic_read.result()
            await cancel_and_wait(mic_read, control)

    def release_hold(self) -> None:
        """An answer paused for a sound is not left silent when the conversation ends."""
        if self.speaker is not None and self.floor is not None and self.floor.holding:
            self.speaker.resume()

    async def _send_audio(self, session: AsyncSession, block: bytes) -> None:
        if self.floor is None:
            await send_audio(session, block)
            return
        for item in self.floor.feed(block, self.model_speaking()):
            if isinstance(item, bytes):
                await send_audio(session, item)
            elif item is Marker.START:
                await session.send_realtime_input(activity_start=types.ActivityStart())
            elif item is Marker.END:
                await session.send_realtime_input(activity_end=types.ActivityEnd())
            elif self.speaker is not None:
                self.speaker.pause() if item is Marker.HOLD else self.speaker.resume()
