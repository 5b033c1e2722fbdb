"""Typed turns (`parla say`): each is a turn of its own with its own id, so what `say` answers is
what became of that turn: `answered` once the turn and its answer are stored (or, past the wait,
kept aside and reported not stored yet), `failed`, or `queued`. A turn no session could send yet
waits for the next session; one no session could send at all is stored in the chat as said,
unanswered."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from parla.memory.errors import StoreError
from parla.memory.store.protocol import ChatRecords
from parla.memory.store.refused import RefusedTurns
from parla.records.turn import Turn
from parla.voice.live.conversation import LiveConversation, SessionEvent

from .daemon_status import DaemonStatus
from .protocol import SayRequest

log = logging.getLogger(__name__)


@dataclass
class TypedTurn:
    """A `parla say` waiting for what became of it: answered (and stored, or kept aside), or
    failed (and then whether the text is stored in the chat)."""

    turn: Turn  # the user turn it is stored as (by id)
    outcome: asyncio.Future[dict[str, Any]]
    sent: bool = False  # said in a session: the session stores it
    answer: Turn | None = None  # the model's answer, on its way to the store

    def settle(self, result: dict[str, Any]) -> None:
        if not self.outcome.done():
            self.outcome.set_result(result)


class TypedTurns:
    """The daemon's typed turns: those not sent yet (`pending`, the next session opens with them)
    and the `say` commands waiting for what became of theirs. Turns not stored in time are kept
    aside in `refused`; `held` has the answers a session holds back from the store while they
    play. `conversation` gives the open session, if any; `activate` opens one."""

    def __init__(
        self,
        store: ChatRecords,
        refused: RefusedTurns,
        held: RefusedTurns,
        status: DaemonStatus,
        conversation: Callable[[], LiveConversation | None],
        activate: asyncio.Event,
    ) -> None:
        self.store = store
        self.refused = refused
        self.held = held
        self.status = status
        self._conversation = conversation
        self._activate = activate
        self.pending: list[Turn] = []
        self._waiting: list[TypedTurn] = []

    async def say(self, request: SayRequest) -> dict[str, Any]:
        """With `wait` (seconds), answers what became of the text: `answered` (with the answer),
        `failed` (with the reason and whether the text is stored) or, past the wait, `queued`."""
        wait = request.wait
        turn = Turn.of("user", request.text, source="text")
        typed = TypedTurn(turn, asyncio.get_running_loop().create_future())
        if wait:
            self._waiting.append(typed)
        conversation = self._conversation()
        if conversation is not None:
            conversation.say(turn)
            sent = "sent"
        else:
            self.pending.append(turn)
            self._activate.set()
            sent = "activating"
        if not wait:
            return {"result": sent}
        try:
            async with asyncio.timeout(wait):
                return await asyncio.shield(typed.outcome)
        except TimeoutError:
            kept = await self._answered_unstored(typed)
            if typed.outcome.done():  # settled meanwhile
                return typed.outcome.result()
            return kept or {"result": "queued", "last_error": self.status.last_error}
        finally:
            if typed in self._waiting:
                self._waiting.remove(typed)

    async def _answered_unstored(self, typed: TypedTurn) -> dict[str, Any] | None:
        """Past the wait, a turn answered and not stored yet (the store is busy) is kept aside
        now, so the `answered` said about it holds even if the daemon is killed; the session
        still stores it (the replay of what is kept then adds nothing). An answer held back from
        the store while the speaker plays it (local detection) is in the held file: answered too,
        once the file has it."""
        conversation, answer = self._conversation(), typed.answer
        if conversation is None:
            return None
        if answer is None:
            return await self._answered_held(conversation, typed)
        reason = "answered, not stored yet when `say` returned"
        if not await conversation.keep_now({typed.turn.id, answer.id}, reason):
            return None
        return {"result": "answered", "answer": answer.text, "stored": False, "kept": str(self.refused.path)}

    async def _answered_held(self, conversation: LiveConversation, typed: TypedTurn) -> dict[str, Any] | None:
        turns = await conversation.keep_held_now({typed.turn.id})
        model = [t for t in turns if t.role == "model"]
        # The held lane logs a write that failed and goes on: answered only if the file has it.
        try:
            on_disk = {r.turn.id for r in await asyncio.to_thread(self.held.read)}
        except (OSError, ValueError):  # unreadable: the next start says so; here the turn is queued
            return None
        if not model or not {t.id for t in turns} <= on_disk:
            return None
        return {"result": "answered", "answer": model[0].text, "stored": False, "kept": str(self.held.path)}

    def follow(self, event: SessionEvent) -> None:
        """A typed turn, by its id, in a batch of the session's turns (an exchange: the user's
        turn, then the answer): queued for storing (its answer is known), then stored or kept
        aside (the `say` waiting for it is told)."""
        ids = [t.id for t in event.turns]
        for typed in list(self._waiting):
            if typed.turn.id not in ids:
                continue
            after = event.turns[ids.index(typed.turn.id) + 1 :]
            if event.kind == "turn":
                typed.sent = True
                typed.answer = after[0] if after and after[0].role == "model" else None
            else:
                kept = {"stored": False, "kept": str(self.refused.path)} if event.kind == "kept" else {}
                if typed.answer is not None:
                    typed.settle({"result": "answered", "answer": typed.answer.text} | kept)
                elif kept:  # the session closed before an answer, and the store did not take the text in time
                    typed.settle({"result": "failed", "error": "the session closed before an answer"} | kept)
                else:
                    continue  # stored unanswered: `store_unsent` tells why
                self._waiting.remove(typed)

    async def store_unsent(self, chat_id: str, deadline: float | None, reason: str) -> None:
        """Typed turns no session could send are stored in the chat as said, unanswered (a
        `say` waiting for them is told so); if the chat cannot take them they stay queued for
        the next session, or, when the daemon stops (a `deadline` for the store is set), are
        kept aside for its next start. A sent turn that was not answered is stored by the
        session itself."""
        unsent, self.pending = self.pending, []
        kept_in: str | None = None
        if unsent:
            try:
                async with asyncio.timeout_at(deadline):
                    await self.store.append_turns(chat_id, unsent)
            except (StoreError, TimeoutError) as e:
                if deadline is None:
                    log.error("typed turns kept for the next session: %s", e, extra={"event": "typed_kept"})
                    self.pending = unsent
                else:
                    await self.refused.keep(chat_id, unsent, f"typed, not stored before Parla stopped ({e})")
                    self.status.kept_turns += len(unsent)
                    kept_in = str(self.refused.path)
        pending = {t.id for t in self.pending}
        for typed in self._waiting:
            unstored = not typed.sent and (typed.turn.id in pending or kept_in is not None)
            answer = {"result": "failed", "error": reason, "stored": not unstored, "chat_id": chat_id}
            typed.settle(answer | ({"kept": kept_in} if kept_in and not typed.sent else {}))
        self._waiting.clear()
