"""Episodic facts: plain-text bullet lines extracted from the raw messages of a range."""

from __future__ import annotations

import re
from datetime import datetime

from pydantic import BaseModel, ConfigDict

from .turn import MessageRange

NO_FACTS = "No facts to record"
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s*")


class FactBlock(BaseModel):
    """The facts of one message range. An empty `lines` records that the range was processed
    and held nothing worth keeping, so it is not extracted again."""

    model_config = ConfigDict(frozen=True)

    chat_id: str
    range: MessageRange
    lines: list[str]
    updated_at: datetime
    # lines the user asked to forget: kept out of `lines` (and of re-extractions of this range)
    forgotten: list[str] = []

    @property
    def text(self) -> str:
        return format_fact_lines(self.lines)


def parse_fact_lines(answer: str) -> list[str]:
    """Bullet lines from a model's answer; [] for the "no facts" answer or an empty one."""
    if NO_FACTS.lower() in answer.lower() and len(answer.strip()) < len(NO_FACTS) + 20:
        return []
    lines = []
    for raw in answer.splitlines():
        line = _BULLET.sub("", raw).strip()
        if len(line) >= 3 and line.lower() != NO_FACTS.lower():
            lines.append(line)
    return lines


def format_fact_lines(lines: list[str]) -> str:
    return "\n".join(f"- {line}" for line in lines)


def stored_fact_lines(text: str) -> list[str]:
    """The lines of a stored block (the inverse of `format_fact_lines`)."""
    return [line[2:] for line in text.splitlines() if line.startswith("- ")]
