"""assistant_history = [one summary turn] + the raw tail, the shape the live model is given."""

from __future__ import annotations

from .turn import Part, Turn

SUMMARY_TURN_PREFIX = "Summary of the conversation so far:\n"


def summary_turn(rolling_summary: str) -> Turn:
    """The model-role turn that stands for everything folded into the rolling summary.

    Its id is fixed so the turn is recognisable wherever assistant_history travels."""
    return Turn(
        id="summary",
        role="model",
        parts=[Part(text=SUMMARY_TURN_PREFIX + rolling_summary)],
        source="tool",
    )


def build_assistant_history(rolling_summary: str, tail: list[Turn]) -> list[Turn]:
    """[summary turn] + tail when something was summarised, else the tail alone."""
    if not rolling_summary:
        return list(tail)
    return [summary_turn(rolling_summary), *tail]
