"""The timer and reminder tools: set_timer, set_reminder, list_reminders, cancel_reminder and
reminder_chat ("take me there": switch to the chat a reminder was set in, through switch_chat).

Times are the user's words, read by dateparser in the speech's language and the user's zone from
the moment the tool is called (`parla.records.reminder.due_time`); the answer says the time understood,
in the user's local time, so the model can repeat it and the user can correct it. A reminder names
the chat the conversation is in. When the store's server is away, the reminder is kept on this
device and in the outbox (`queued`); this device says it when due either way.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field, model_validator

from parla.kernel.local_time import LocalClock, spoken_date
from parla.memory.errors import WriteQueued
from parla.memory.language.due_times import due_time
from parla.memory.language.text import content_words
from parla.memory.store.protocol import ReminderRecords
from parla.records.reminder import Reminder, ReminderKind, bounded_text

from .chats import ChatSession, SwitchArgs
from .registry import Tool

_QUEUED = {
    "queued": True,
    "queued_note": "Set on this device; the store is unreachable, so the user's other devices learn of it later.",
}


class TimerArgs(BaseModel):
    duration: str = Field(description="How long, as the user said it: '10 minutes', '1 hour 30 minutes', '90 seconds'.")
    label: str | None = Field(None, description="What the timer is for, if the user said (e.g. 'pasta').")


class ReminderArgs(BaseModel):
    text: str = Field(min_length=1, description="What to remind the user of, in their words ('call my sister').")
    when: str = Field(
        description="When, in the user's words with the time of day as HH:MM (24 h): 'at 17:00', "
        "'tomorrow at 09:00', 'in 2 hours', 'friday at 10:00', 'domani alle 09:00'. "
        "For a part of the day ('tomorrow morning') pick the hour and say it."
    )


class NoArgs(BaseModel):
    pass


class WhichArgs(BaseModel):
    description: str | None = Field(None, description="Which reminder, in the user's words ('the dentist one').")
    reminder_id: str | None = Field(None, description="A reminder_id from the candidates of an earlier call.")

    @model_validator(mode="after")
    def _one(self) -> WhichArgs:
        if bool(self.description and self.description.strip()) == bool(self.reminder_id):
            raise ValueError("give either description or reminder_id, not both and not neither")
        return self


def best_matches(reminders: Sequence[Reminder], description: str) -> list[Reminder]:
    """The reminders sharing the most content words with `description` (all that tie), none when
    no word is shared."""
    wanted = set(content_words(description))
    scored = [(len(wanted & set(content_words(r.text))), r) for r in reminders]
    top = max((score for score, _ in scored), default=0)
    return [r for score, r in scored if top and score == top]


class ReminderTools:
    def __init__(
        self,
        store: ReminderRecords,
        session: ChatSession,
        switch: Callable[[SwitchArgs], Awaitable[dict[str, Any]]],
        clock: LocalClock,
        languages: Sequence[str],
        device: str,
        max_chars: int,
        on_change: Callable[[], None] | None = None,
    ) -> None:
        """`switch`: switch_chat's handler; `max_chars`: the longest text a reminder is set with;
        `on_change`: told after every add or cancel (the scheduler reads the store again)."""
        self.store = store
        self.max_chars = max_chars
        self.session = session
        self._switch = switch
        self.clock = clock
        self.languages = tuple(languages)
        self.device = device
        self._on_change = on_change or (lambda: None)

    def tools(self) -> list[Tool]:
        return [
            Tool(
                "set_timer",
                "Start a timer when the user asks ('set a timer for ten minutes'). At its end Parla plays a tone "
                "and says it, even with no conversation open. Tell the user when it ends.",
                TimerArgs,
                self.set_timer,
            ),
            Tool(
                "set_reminder",
                "Remind the user of something at a time ('remind me at five to call my sister'). Parla says it "
                "at that time, even with no conversation open. Repeat the time understood (the answer's 'due') "
                "so the user can correct it.",
                ReminderArgs,
                self.set_reminder,
            ),
            Tool(
                "list_reminders",
                "The user's timers and reminders still to come, soonest first, each with its time and chat.",
                NoArgs,
                self.list_reminders,
            ),
            Tool(
                "cancel_reminder",
                "Cancel a timer or reminder when the user asks ('cancel the dentist one'). On 'ambiguous', ask "
                "which and call again with its reminder_id.",
                WhichArgs,
                self.cancel_reminder,
            ),
            Tool(
                "reminder_chat",
                "Go to the chat a reminder was set in, when the user asks after hearing it ('take me there').",
                WhichArgs,
                self.reminder_chat,
            ),
        ]

    def _said(self, moment: datetime) -> str:
        """The moment in the user's words: 'today at 17:00', 'tomorrow at 09:00', or the date."""
        now = self.clock.now().at
        local = moment.astimezone(now.tzinfo)
        days = (local.date() - now.date()).days
        day = "today" if days == 0 else "tomorrow" if days == 1 else spoken_date(local)
        return f"{day} at {local:%H:%M}" + (f":{local:%S}" if local.second else "")

    def _card(self, r: Reminder) -> dict[str, Any]:
        return {"reminder_id": r.id, "kind": r.kind, "text": r.text, "due": self._said(r.due_at), "state": r.state}

    async def _add(self, text: str, when: datetime, kind: ReminderKind) -> dict[str, Any]:
        reminder = Reminder(
            text=bounded_text(text, self.max_chars),
            due_at=when,
            time_zone=self.clock.zone or "UTC",  # the system's zone has no IANA name to keep
            kind=kind,
            chat_id=self.session.chat_id,
            device=self.device,
        )
        try:
            stored, queued = await self.store.add_reminder(reminder), {}
        except WriteQueued:
            stored, queued = reminder, _QUEUED
        self._on_change()
        return {"result": "set", **self._card(stored), **queued}

    def _due(self, when: str) -> datetime:
        return due_time(when, self.clock.now().at, self.languages)

    async def set_timer(self, args: TimerArgs) -> dict[str, Any]:
        duration = args.duration.strip()
        due = self._due(duration if duration.casefold().startswith("in ") else f"in {duration}")
        return await self._add(args.label or f"{duration} timer", due, "timer")

    async def set_reminder(self, args: ReminderArgs) -> dict[str, Any]:
        return await self._add(args.text, self._due(args.when), "reminder")

    async def list_reminders(self, _: NoArgs) -> dict[str, Any]:
        pending = await self.store.list_reminders()
        return {"reminders": [self._card(r) for r in pending]} if pending else {"reminders": [], "say": "None set."}

    async def _which(self, args: WhichArgs, reminders: Sequence[Reminder]) -> Reminder | dict[str, Any]:
        if args.reminder_id:
            found = [r for r in reminders if r.id.startswith(args.reminder_id.strip().lower())]
        else:
            assert args.description is not None
            found = best_matches(reminders, args.description)
        if len(found) == 1:
            return found[0]
        if not found:
            return {"result": "none", "say": "No reminder matches; offer to list them (list_reminders)."}
        return {
            "result": "ambiguous",
            "candidates": [self._card(r) for r in found],
            "say": "Ask the user which one they mean, then call again with its reminder_id.",
        }

    async def cancel_reminder(self, args: WhichArgs) -> dict[str, Any]:
        which = await self._which(args, await self.store.list_reminders())
        if isinstance(which, dict):
            return which
        try:
            cancelled, queued = await self.store.cancel_reminder(which.id), {}
        except WriteQueued:
            cancelled, queued = which.model_copy(update={"state": "cancelled"}), _QUEUED
        self._on_change()
        return {"result": "cancelled", **self._card(cancelled), **queued}

    async def reminder_chat(self, args: WhichArgs) -> dict[str, Any]:
        # the one just said is fired already: every reminder is a candidate, newest due first
        reminders = [r for r in await self.store.list_reminders(history=True) if r.state != "cancelled"]
        which = await self._which(args, reminders) if args.reminder_id else self._latest(args, reminders)
        if isinstance(which, dict):
            return which
        if which.chat_id is None:
            return {"result": "none", "say": "That reminder was set outside any chat (from the command line)."}
        return await self._switch(SwitchArgs(query=None, chat_id=which.chat_id))

    def _latest(self, args: WhichArgs, reminders: Sequence[Reminder]) -> Reminder | dict[str, Any]:
        """The best match by words, the most recently due among equals: 'take me there' right after
        a reminder is said means that one."""
        assert args.description is not None
        found = best_matches(reminders, args.description) or list(reminders)
        if not found:
            return {"result": "none", "say": "No reminder has been set yet."}
        now = self.clock.now_utc()
        said = [r for r in found if r.due_at <= now] or found
        return max(said, key=lambda r: r.due_at)
