"""Summaries, facts and titles from a cheap Gemini flash model through google-genai.

The rolling summary is the existing summary updated with new turns under a hard token cap; facts
are plain bullet lines with an explicit "no facts" answer, extracted from messages cut to
`facts_message_max_chars`; titles are short and plain. Each is written in the conversation's
language; the instructions are settings (defaults in memory/prompts.py). Failures
follow the embedder's policy (memory.embedders.gemini): retried by the client once, then a
ModelError, or ModelUnavailable when Gemini cannot be used now; an empty or blocked answer is a
ModelError (the caller keeps its data as it was)."""

from __future__ import annotations

from google import genai
from google.genai import types

from parla.memory.config import MemoryConfig
from parla.memory.embedders.gemini import GeminiAvailability
from parla.memory.errors import ModelError
from parla.memory.facts import parse_fact_lines
from parla.memory.summarizers import transcript
from parla.memory.tokens import truncate_to_tokens
from parla.memory.turn import Turn


class GeminiSummarizer:
    def __init__(
        self,
        client: genai.Client,
        model: str,
        availability: GeminiAvailability | None = None,
        config: MemoryConfig | None = None,
    ) -> None:
        self._client = client
        self.availability = availability or GeminiAvailability()
        self.config = config or MemoryConfig.model_validate({})
        self.model = model
        self.name = f"gemini-{model}"

    async def _ask(self, system: str, prompt: str) -> str:
        # No max_output_tokens: on thinking models it also bounds the thoughts and can leave no
        # answer at all. Length is asked for in the prompt and enforced by truncation. No sampling
        # knobs: gemini-3.5-flash-lite ignores temperature/top-k/top-p and refuses frequency and
        # presence penalties; the one content is the user's (it refuses a request ending on a model
        # turn). https://docs.cloud.google.com/gemini-enterprise-agent-platform/models/gemini/3-5-flash-lite
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

    async def chunk_summary(self, turns: list[Turn], cap_tokens: int) -> str:
        answer = await self._ask(_capped(self.config.chunk_summary_prompt, cap_tokens), transcript(turns))
        return truncate_to_tokens(answer, cap_tokens)

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
