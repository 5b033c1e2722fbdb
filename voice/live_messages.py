"""What the Live conversation queues to send (typed turns, tools' answers) and reads of the
server's messages (a GoAway's time left, the usage report)."""

from __future__ import annotations

from dataclasses import dataclass

from google.genai import types

from parla.memory.turn import TokenUsage, Turn


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
