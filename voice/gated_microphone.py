"""Muting: the microphone the live session and the wake-phrase spotter read, with a switch."""

from __future__ import annotations

from parla.voice.audio import Microphone


class GatedMicrophone:
    """The microphone as the live session reads it: while muted, blocks are read and dropped, so
    nothing is sent and no stale audio is waiting when the user unmutes."""

    def __init__(self, microphone: Microphone) -> None:
        self.microphone = microphone
        self.muted = False

    async def read(self) -> bytes:
        while True:
            block = await self.microphone.read()
            if not self.muted:
                return block
