"""The chat the conversation is in, and its finished turns on their way to the store: each exchange
goes to the turn saver (voice.live.turn_saver) for the chat it was said in, and the owner hears of
it; an exchange held back from the store is kept on disk meanwhile."""

from __future__ import annotations

from dataclasses import dataclass

from parla.records.turn import Turn

from .session_memory import SessionMemory
from .status import Events, SessionEvent
from .transcript import TranscriptAssembler
from .turn_saver import TurnSaver


@dataclass
class ChatTurns:
    memory: SessionMemory  # the chat's; a switch changes it
    assembler: TranscriptAssembler
    saver: TurnSaver
    events: Events

    def store(self, turns: list[Turn]) -> None:
        """Finished turns, to be stored in this chat (the owner hears of them as a "turn" event)."""
        # A held exchange kept on disk and released now: that copy is forgotten once these are stored.
        forget = self.assembler.released_kept()
        if turns or forget:
            self.saver.put(self.memory, turns, forget)
        if turns:
            lines = (t.transcript_line() + (" [cut off]" if t.interrupted else "") for t in turns)
            self.events(SessionEvent("turn", "\n".join(lines), tuple(turns)))

    def keep_held(self) -> None:
        """Held past the transcript hold, the exchange is kept on disk as it would be stored now
        (whole: better stored whole than lost if the daemon dies before it is released)."""
        turns = self.assembler.keep_held()
        if turns:
            self.saver.hold(self.memory, turns)

    async def flush(self) -> None:
        """Whatever is open stored in this chat, and the saver done with every turn before it:
        before a switch or a fresh seed read from the store."""
        self.store(self.assembler.flush())
        await self.saver.drain()
