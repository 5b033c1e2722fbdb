"""Parla decides who has the floor (`PARLA_TURN_DETECTION=local`): the microphone's blocks go through
the floor (voice.turns.floor), whose markers become the session's activityStart and activityEnd and
what the speaker does with the answer: pause it for a sound over it, let it go on, or cut it. The
service's detection is off in the setup, so only the audio of the user's turn is sent."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from ..config import SAMPLE_BYTES, SPEAKER_RATE
from .detection import Answer, Playback, RealtimeInput
from .floor import Floor, Marker

log = logging.getLogger(__name__)


@dataclass
class LocalDetection:
    floor: Floor
    speaker: Playback | None

    @property
    def deciding(self) -> bool:
        return self.floor.deciding

    async def opened(self, to: RealtimeInput) -> None:
        if self.floor.talking:  # the user was talking when the last connection ended
            await to.activity_start()

    async def feed(self, block: bytes, answer: Answer, to: RealtimeInput) -> None:
        deciding = self.floor.deciding
        # An answer the floor let go on after the service stopped it plays to its end, and the
        # service generates faster than it is played: the answer is under way while it plays.
        playing = self.speaker is not None and self.speaker.queued()
        for item in self.floor.feed(block, answer.speaking or playing):
            if isinstance(item, bytes):
                await to.audio(item)
            elif item is Marker.START:
                await to.activity_start()
            elif item is Marker.END:
                await to.activity_end()
            else:
                self._speaker(item, answer)
        if deciding and not self.floor.deciding:
            answer.decided()

    def heard(self, text: str, answer: Answer) -> None:
        deciding = self.floor.deciding
        for item in self.floor.heard(text):
            self._speaker(item, answer)
        if deciding and not self.floor.deciding:
            answer.decided()

    def interrupted(self) -> int:
        # While the floor waits for the words of the sound that stopped the answer, the speaker
        # keeps what it has not played: a "mm-hmm" lets it go on.
        if self.speaker is None or self.floor.deciding:
            return 0
        return self.speaker.flush()

    def cuttable_s(self) -> float | None:
        # The service sends the answer faster than it plays: the floor may cut what is left.
        if self.speaker is None or not self.speaker.queued():
            return None
        return self.speaker.ahead_s()

    def close(self) -> None:
        if self.speaker is not None and self.floor.holding:
            self.speaker.resume()

    def _speaker(self, item: Marker, answer: Answer) -> None:
        if self.speaker is None:
            return
        if item is Marker.HOLD:
            self.speaker.pause()
        elif item is Marker.RELEASE:
            self.speaker.resume()
        elif item is Marker.CUT:
            dropped = self.speaker.flush()
            log.info(
                "the user took the floor over the answer: %.1f s of the answer dropped",
                dropped / (SPEAKER_RATE * SAMPLE_BYTES),
                extra={"event": "floor_cut"},
            )
            if dropped:
                answer.unheard(dropped)
