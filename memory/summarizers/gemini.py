"""Summaries, facts and titles from a cheap Gemini flash model through google-genai.

The rolling summary is the existing summary updated with new turns under a hard token cap; facts
are plain bullet lines with an explicit "no facts" answer; titles are short and plain. Failures
follow the embedder's policy (memory.embedders.gemini): retried by the client once, then a
ModelError, or ModelUnavailable when Gemini cannot be used now; an empty or blocked answer is a
ModelError (the caller keeps its data as it was)."""

from __future__ import annotations

import re

from google import genai
from google.genai import types

from parla.memory.auto_pins import PinCandidate
from parla.memory.embedders.gemini import GeminiAvailability
from parla.memory.errors import ModelError
from parla.memory.facts import NO_FACTS, parse_fact_lines
from parla.memory.importance import turn_importance
from parla.memory.summarizers import transcript
from parla.memory.summary import ChunkSummary
from parla.memory.tokens import truncate_to_tokens
from parla.memory.turn import Turn

_IMPORTANCE = re.compile(r"^\s*\**importance\**\s*:\s*(\d+(?:\.\d+)?)\s*\**\s*$", re.IGNORECASE | re.MULTILINE)
_PIN_LINE = re.compile(r"^\[(\d+)\]\s*(\d+(?:\.\d+)?)\s*\|\s*(.+)$")

ROLLING_PROMPT = """You maintain the running summary of a spoken conversation between a user and a voice assistant.
Update the existing summary so that it also covers the new turns. Keep goals, decisions, constraints,
preferences, open questions, names, places, dates and numbers; drop small talk and repetition.
Write plain prose, third person ("The user ..."), at most {cap} tokens. Answer with the summary only."""

CHUNK_PROMPT = """Summarise this excerpt of a conversation between a user and a voice assistant in at most {cap}
tokens of plain prose: what was discussed, decided or left open. Then, on a last line of its own, write
"Importance: N" with N from 0 (small talk) to 10 (the user's health, safety, family or a lasting decision):
how much this excerpt matters to the user later. Answer with the summary and that line only."""

PINS_PROMPT = f"""Find the durable, important statements the user makes about themselves in this conversation
excerpt: health and allergies, family and the people close to them, names, dates that matter to them,
decisions, lasting preferences, codes and numbers they will need again. Skip passing moods, questions,
hypotheticals and what the assistant says. Each turn starts with its number in brackets. Write each
statement as one line: "- [turn number] importance 0-10 | the fact in the third person". If there is
none, answer only "{NO_FACTS}"."""

FACTS_PROMPT = f"""Extract the specific facts from this conversation excerpt that are worth remembering later:
first-time events, places, dates and times, names, numbers and amounts, the user's preferences and
habits, promises and decisions. Skip generic conversation. Write each fact as one plain-text line
starting with "- ". No JSON, no Markdown headings. If there is nothing worth recording, answer only
"{NO_FACTS}"."""

META_PROMPT = """These are consecutive summaries of parts of one conversation, oldest first. Merge them into one
overview of at most {cap} tokens that keeps the decisions, facts and open threads, in plain prose.
Answer with the overview only."""

TITLE_PROMPT = """Give this conversation a short title (2 to 6 words) naming its topic, as a person would
label a folder. No quotes, no trailing punctuation. Answer with the title only."""


class GeminiSummarizer:
    def __init__(self, client: genai.Client, model: str, availability: GeminiAvailability | None = None) -> None:
        self._client = client
        self.availability = availability or GeminiAvailability()
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
        answer = await self._ask(ROLLING_PROMPT.format(cap=cap_tokens), prompt)
        return truncate_to_tokens(answer, cap_tokens)

    async def chunk_summary(self, turns: list[Turn], cap_tokens: int) -> ChunkSummary:
        answer = await self._ask(CHUNK_PROMPT.format(cap=cap_tokens), transcript(turns))
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
        for line in parse_fact_lines(await self._ask(PINS_PROMPT, numbered)):
            match = _PIN_LINE.match(line)
            if match and int(match.group(1)) in by_seq and match.group(3).strip():
                importance = min(float(match.group(2)), 10.0)
                found.append(PinCandidate(match.group(3).strip(), importance, by_seq[int(match.group(1))]))
        return found

    async def facts(self, turns: list[Turn]) -> list[str]:
        return parse_fact_lines(await self._ask(FACTS_PROMPT, transcript(turns)))

    async def meta_summary(self, summaries: list[str], cap_tokens: int) -> str:
        numbered = "\n\n".join(f"[{i}] {s}" for i, s in enumerate(summaries, start=1))
        answer = await self._ask(META_PROMPT.format(cap=cap_tokens), numbered)
        return truncate_to_tokens(answer, cap_tokens)

    async def title(self, description: str) -> str:
        answer = await self._ask(TITLE_PROMPT, description)
        return answer.splitlines()[0].strip().strip("\"'").rstrip(".")[:80]
