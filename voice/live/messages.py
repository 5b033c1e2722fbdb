"""What the Live conversation queues to send (typed turns, tools' answers, in the order they may
go: `Outbox`), and the server's messages: reading them off the session (`receive`), a GoAway's
time left, the usage report."""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from google.genai import types
from google.genai.live import AsyncSession

from parla.records.turn import TokenUsage, Turn

from ..errors import UnreadableMessage

log = logging.getLogger(__name__)


@dataclass
class Text:
    """A typed turn waiting to be sent."""

    turn: Turn


@dataclass
class ToolResult:
    """A tool's answer, for the connection that issued the call (`connection`)."""

    response: types.FunctionResponse
    connection: int

    def as_text(self) -> str:
        """The result as conversation, in words: given JSON as conversation, the model reads it out
        braces and quotes included."""
        r = self.response
        return (
            f"(The {r.name} call you made before the connection was renewed has returned; say what it "
            f"means in your own words, do not read it out.) {r.name} returned: {in_words(r.response)}."
        )


def in_words(value: object) -> str:
    """A tool's result as plain phrases: "key: value" pairs joined by semicolons, lists by commas."""
    if isinstance(value, dict):
        return "; ".join(f"{str(k).replace('_', ' ')}: {in_words(v)}" for k, v in value.items()) or "nothing"
    if isinstance(value, (list, tuple)):
        return ", ".join(in_words(v) for v in value) or "nothing"
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value).replace('"', "")


Outgoing = Text | ToolResult


class Outbox:
    """The queued items, and the order they may go in. Tools' answers for the open connection go
    first, always (the model may be waiting on them); conversation turns (typed turns, and
    answers to calls an earlier connection issued) go in order, one at a time, when the
    conversation says none has to wait. `ready` is set when something may have become sendable."""

    def __init__(self) -> None:
        self._items: deque[Outgoing] = deque()
        self.ready = asyncio.Event()

    def __bool__(self) -> bool:
        return bool(self._items)

    def put(self, item: Outgoing, first: bool = False) -> None:
        if first:
            self._items.appendleft(item)
        else:
            self._items.append(item)
        self.ready.set()

    def wake(self) -> None:
        """Something that held a conversation turn back may have ended: the send loop looks again."""
        if self._items:
            self.ready.set()

    def take(self, connection: int, conversation_waits: bool) -> Outgoing | None:
        """The next item that may go now on connection number `connection`, taken off the queue."""
        items = [i for i, item in enumerate(self._items) if not _is_conversation(item, connection)]
        if not items and self._items and not conversation_waits:
            items = [0]
        if not items:
            return None
        item = self._items[items[0]]
        del self._items[items[0]]
        return item

    def unsent(self) -> list[Turn]:
        """The typed turns still queued."""
        return [item.turn for item in self._items if isinstance(item, Text)]


def _is_conversation(item: Outgoing, connection: int) -> bool:
    return isinstance(item, Text) or item.connection != connection


async def receive(session: AsyncSession, on_message: Callable[[types.LiveServerMessage], None]) -> None:
    """Every message the session gets, to `on_message`, until the connection ends. A message of a
    type the SDK does not know is skipped (logged): the stream is intact, and a newer service must
    not cost a reconnect per message. A message that is not JSON raises UnreadableMessage."""
    while True:  # receive() ends after each turnComplete, and after a message it cannot read
        messages = session.receive()
        while True:
            try:
                message = await anext(messages)
            except StopAsyncIteration:
                break
            except TypeError as e:
                # The SDK parses in receive(): a message with no field it knows (a message
                # type newer than the SDK) raises TypeError. The stream itself is intact and
                # the message is nothing Parla asked for: skip it and read on.
                log.warning(
                    "skipped a Live API message of a type the SDK does not know (%s)",
                    e,
                    extra={"event": "live_unknown_message"},
                )
                break
            except ValueError as e:
                # Broken JSON: what the server meant (a turn's end, a tool call) is lost.
                raise UnreadableMessage(f"a message from the Live API could not be read (ValueError: {e})") from e
            on_message(message)


def parse_seconds(duration: str | None) -> float | None:
    if not duration:
        return None
    try:
        return float(duration.rstrip("s"))
    except ValueError:
        return None


def token_usage(m: types.UsageMetadata) -> TokenUsage:
    """The service's usageMetadata (the Live API's UsageMetadata message: promptTokenCount,
    responseTokenCount, totalTokenCount, cachedContentTokenCount, thoughtsTokenCount,
    toolUsePromptTokenCount) as stored with the model turn."""
    return TokenUsage(
        prompt_tokens=m.prompt_token_count,
        response_tokens=m.response_token_count,
        total_tokens=m.total_token_count,
        cached_tokens=m.cached_content_token_count,
        thoughts_tokens=m.thoughts_token_count,
        tool_use_prompt_tokens=m.tool_use_prompt_token_count,
    )
