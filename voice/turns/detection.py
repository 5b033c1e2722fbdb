"""Turn detection, one interface for both ways of deciding who has the floor
(`PARLA_TURN_DETECTION`, voice.turns.choice): the service's automatic activity detection
(`service`, voice.turns.service) or Parla's own floor on this machine (`local`, voice.turns.local).
The Live conversation feeds it the microphone's blocks and the service's transcript of the user,
asks it what an `interrupted` drops from the speaker and whether an ended answer may still be cut,
and never asks which one it has. The setup (voice.live.setup) turns the service's detection off for
the local one, and the echo canceller judges the near end only for it (daemon.conversation)."""

from __future__ import annotations

from typing import Protocol


class RealtimeInput(Protocol):
    """The open session's realtime input: where the floor's decisions go."""

    async def audio(self, block: bytes) -> None: ...
    async def activity_start(self) -> None: ...
    async def activity_end(self) -> None: ...


class Playback(Protocol):
    """The speaker, as far as the floor acts on it: the model's answer it holds, not played yet."""

    def flush(self) -> int: ...
    def ahead_s(self) -> float: ...
    def queued(self) -> bool: ...
    def pause(self) -> None: ...
    def resume(self) -> None: ...


class Answer(Protocol):
    """The model's answer, as far as the floor needs it (voice.live.model_turn keeps it)."""

    @property
    def speaking(self) -> bool:
        """The model is sending its answer (the speaker may still play it after)."""
        ...

    def unheard(self, nbytes: int) -> None:
        """The floor dropped `nbytes` of the answer from the speaker unplayed."""
        ...

    def decided(self) -> None:
        """The floor stopped deciding on a sound over the answer (see `TurnDetection.deciding`)."""
        ...


class TurnDetection(Protocol):
    @property
    def deciding(self) -> bool:
        """The answer's fate waits for the words of the user's sound over it: the speaker keeps
        what it has not played, whatever the service says, until `Answer.decided`."""
        ...

    async def opened(self, to: RealtimeInput) -> None:
        """A new connection: what goes on it before any audio (the user's turn, if it was open
        when the last one ended)."""
        ...

    async def feed(self, block: bytes, answer: Answer, to: RealtimeInput) -> None:
        """A block of the microphone's audio: what of it goes to the session, and what the floor
        does with the speaker meanwhile."""
        ...

    def heard(self, text: str, answer: Answer) -> None:
        """A piece of the service's transcript of the user's input."""
        ...

    def interrupted(self) -> int:
        """The service stopped the answer (`interrupted`): the bytes of it dropped from the speaker."""
        ...

    def cuttable_s(self) -> float | None:
        """The seconds the speaker still holds of an answer the service has ended, when the floor
        may yet cut them (the stored turn then keeps only what was played); None when it may not."""
        ...

    def close(self) -> None:
        """The conversation ends: an answer paused for a sound is not left silent."""
        ...
