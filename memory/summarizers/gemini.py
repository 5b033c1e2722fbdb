"""Summaries, facts and titles from a cheap Gemini flash model through google-genai.

The rolling summary is the existing summary updated with new turns under a hard token cap; facts
are plain bullet lines with an explicit "no facts" answer, extracted from messages cut to
`facts_message_max_chars`; titles are short and plain. Each is written in the conversation's
language; the instructions are settings (defaults in memory/summarizers/prompts.py). Failures
follow the embedder's policy (memory.embedders.gemini): retried by the client once, then a
ModelError, or ModelUnavailable when Gemini cannot be used now; an empty or blocked answer is a
ModelError (the caller keeps its data as it was)."""

from __future__ import annotations

import re

from google import genai
from google.genai import types

from parla.kernel.rate import CallSpacing
from parla.kernel.tokens import truncate_to_tokens
from parla.records.facts import parse_fact_lines
from parla.records.summary import ChunkSummary
from parla.records.turn import Turn

from .. import prompts
from ..config import MemoryConfig
from ..embedders.gemini import GeminiAvailability
from ..errors import ModelError
from ..language.auto_pins import PinCandidate
from ..language.importance import turn_importance
from . import shortened, transcript

_IMPORTANCE = re.compile(r"^\s*\**importance\**\s*:\s*(\d+(?:\.\d+)?)\s*\**\s*$", re.IGNORECASE | re.MULTILINE)
# "[turn] importance | user or chat | subject | fact"; a line without the scope and subject (the
# older format, or a model that left them out) is taken as about the user, as the rules' are.
_PIN_LINE = re.compile(
    r"^\[(\d+)\]\s*(?:importance\s*)?(\d+(?:\.\d+)?)\s*\|"
    r"(?:\s*(user|chat)\s*\|(?:\s*([^|]*?)\s*\|)?)?\s*(.+)$",
    re.IGNORECASE,
)
_NO_SUBJECT = frozenset({"", "-", "none", "n/a"})
# "[2] yes" (a model may leave out the brackets or add a dash)
_VERDICT = re.compile(r"^\W*(\d+)\W*(yes|no)\b", re.IGNORECASE | re.MULTILINE)
# The user's message shown under a statement to check, cut as a pasted document would be.
_SOURCE_CHARS = 600


class GeminiSummarizer:
    def __init__(
        self,
        client: genai.Client,
        model: str,
        availability: GeminiAvailability | None = None,
        config: MemoryConfig | None = None,
        spacing: CallSpacing | None = None,
    ) -> None:
        self._client = client
        self.availability = availability or GeminiAvailability()
        self.spacing = spacing  # calls spaced to stay under a rate limit (background work only)
        self.config = config or MemoryConfig.model_validate({})
        self.model = model
        self.name = f"gemini-{model}"

    async def _ask(self, system: str, prompt: str) -> str:
        # No max_output_tokens: on thinking models it also bounds the thoughts and can leave no
        # answer at all. Length is asked for in the prompt and enforced by truncation. No sampling
        # knobs: gemini-3.5-flash-lite ignores temperature/top-k/top-p and refuses frequency and
        # presence penalties; the one content is the user's (it refuses a request ending on a model
        # turn). https://docs.cloud.google.com/gemini-enterprise-agent-platform/models/gemini/3-5-flash-lite
        if self.spacing is not None:
            await self.spacing.wait()
        response = await self.availability.call(
            self.model,
            "summary",
            self.model,
            lambda: self._client.aio.models.generate_content(
                model=self.model,
                contents=prompt,
                config=types.GenerateContentConfig(system_instruction=system),
            ),
        )
        text = (response.text or "").strip()
        if not text:
            reason = response.candidates[0].finish_reason if response.candidates else "no candidates"
            raise ModelError(f"Gemini {self.model} gave no text (finish reason: {reason})")
        return text

    async def rolling_summary(self, existing: str, turns: list[Turn], cap_tokens: int) -> str:
        prompt = (
            f"=== EXISTING_SUMMARY ===\n{existing or 'NONE'}\n=== END_EXISTING_SUMMARY ===\n\n"
            f"=== NEW_TURNS ===\n{transcript(turns)}\n=== END_NEW_TURNS ==="
        )
        answer = await self._ask(_capped(self.config.rolling_summary_prompt, cap_tokens), prompt)
        return truncate_to_tokens(answer, cap_tokens)

    async def chunk_summary(self, turns: list[Turn], cap_tokens: int) -> ChunkSummary:
        instructions = f"{_capped(self.config.chunk_summary_prompt, cap_tokens)}\n{prompts.IMPORTANCE_LINE}"
        answer = await self._ask(instructions, transcript(turns))
        rated = _IMPORTANCE.search(answer)
        if rated is None:  # the model left the line out: the rules judge the range instead
            importance = max((turn_importance(t) for t in turns), default=0.0)
        else:
            importance = min(float(rated.group(1)), 10.0)
            answer = answer[: rated.start()].rstrip()
        return ChunkSummary(truncate_to_tokens(answer, cap_tokens), importance)

    async def pins(self, turns: list[Turn]) -> list[PinCandidate]:
        by_seq = {t.seq: t for t in turns}
        numbered = "\n".join(f"[{t.seq}] {t.transcript_line()}" for t in turns)
        found = []
        for line in parse_fact_lines(await self._ask(prompts.PINS, numbered)):
            match = _PIN_LINE.match(line)
            if match and int(match.group(1)) in by_seq and match.group(5).strip():
                turn, rated, scope, subject, fact = match.groups()
                found.append(
                    PinCandidate(
                        fact.strip(),
                        min(float(rated), 10.0),
                        by_seq[int(turn)],
                        about_user=(scope or "user").casefold() == "user",
                        subject=None if (subject or "").casefold() in _NO_SUBJECT else subject,
                    )
                )
        return found

    async def about_user(self, candidates: list[PinCandidate]) -> list[PinCandidate]:
        # what the assistant said is never the user's, whatever the model answers
        asked = [c for c in candidates if c.source.role == "user"]
        if not asked:
            return []
        listed = "\n".join(
            f"[{n}] {c.content}\n    the user said: {shortened(c.source.text, _SOURCE_CHARS)}"
            for n, c in enumerate(asked, start=1)
        )
        answer = await self._ask(prompts.ABOUT_USER, listed)
        confirmed = {int(m.group(1)) for m in _VERDICT.finditer(answer) if m.group(2).casefold() == "yes"}
        return [c for n, c in enumerate(asked, start=1) if n in confirmed]

    async def facts(self, turns: list[Turn]) -> list[str]:
        return parse_fact_lines(
            await self._ask(self.config.facts_prompt, transcript(turns, self.config.facts_message_max_chars))
        )

    async def meta_summary(self, summaries: list[str], cap_tokens: int) -> str:
        numbered = "\n\n".join(f"[{i}] {s}" for i, s in enumerate(summaries, start=1))
        answer = await self._ask(_capped(self.config.meta_summary_prompt, cap_tokens), numbered)
        return truncate_to_tokens(answer, cap_tokens)

    async def title(self, description: str) -> str:
        answer = await self._ask(self.config.title_prompt, description)
        return answer.splitlines()[0].strip().strip("\"'").rstrip(".")[:80]


def _capped(prompt: str, cap_tokens: int) -> str:
    # replace, not format: a prompt the user wrote may hold other braces
    return prompt.replace("{cap}", str(cap_tokens))
