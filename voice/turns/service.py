"""The service decides who has the floor (`PARLA_TURN_DETECTION=service`, the default): its automatic
activity detection hears the microphone's audio, sent as it is, and marks the user's turns; when
the user talks over the answer it stops it (`interrupted`), and what the speaker holds of it goes."""

from __future__ import annotations

from dataclasses import dataclass

from .detection import Answer, Playback, RealtimeInput


@dataclass
class ServiceDetection:
    speaker: Playback | None

    @property
    def deciding(self) -> bool:
        return False  # the service's `interrupted` settles the answer's fate

    async def opened(self, to: RealtimeInput) -> None:
        return None  # the service's detection hears the audio that follows

    async def feed(self, block: bytes, answer: Answer, to: RealtimeInput) -> None:
        await to.audio(block)

    def heard(self, text: str, answer: Answer) -> None:
        return None  # the service decided on the audio already

    def interrupted(self) -> int:
        return self.speaker.flush() if self.speaker is not None else 0

    def cuttable_s(self) -> float | None:
        return None  # Parla judges no sound over the answer: it is stored after the transcript hold

    def close(self) -> None:
        return None  # the speaker is never paused
