"""Muting and listening: the microphone the live session and the wake-phrase spotter read, whose
stream is open only while something listens and it is not muted. A closed stream costs nothing:
no callbacks, no sound-server traffic; reading then waits until it is opened again."""

from __future__ import annotations

from .devices import Microphone


class GatedMicrophone:
    def __init__(self, microphone: Microphone) -> None:
        self.microphone = microphone
        self._muted = False
        self._block_ms: int | None = None  # None: nobody listens

    @property
    def muted(self) -> bool:
        return self._muted

    @property
    def is_open(self) -> bool:
        return self.microphone.is_open

    def mute(self, muted: bool) -> None:
        """While muted the stream is closed: nothing is heard or sent, and nothing stale is
        waiting when the user unmutes."""
        self._muted = muted
        self._apply()

    def listen(self, block_ms: int | None) -> None:
        """Open the stream with blocks of `block_ms` (unless muted), or close it (None)."""
        self._block_ms = block_ms
        self._apply()

    def _apply(self) -> None:
        if self._muted or self._block_ms is None:
            self.microphone.close()
        else:
            self.microphone.open(self._block_ms)

    async def read(self) -> bytes:
        return await self.microphone.read()
