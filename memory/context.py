"""The memory block the live model gets, within PROMPT_MEMORY_BUDGET tokens.

Sections, always in this order so the prompt prefix stays stable for caching: what Parla knows
about the user from every chat (the profile, most important and most recent first, within
`context_profile_budget`; an entry this chat pinned from the same turn is left to the pin), pinned
facts (by importance), important earlier turns, the rolling summary, meta summaries, key facts, the
recent turns verbatim. Important earlier turns are summarised turns of at least
`context_important_min` quoted as said, the most important that fit `context_important_budget` (a
turn a pin came from is left out: the pin says it), so a long chat does not rely on its summary
alone. Facts of ranges still in the tail are left out (the tail says it verbatim); key facts are the
newest that fit `context_facts_budget`. Chunk summaries are not in the context: the rolling summary
already covers their turns; they serve search and recall.

Every item but a recent turn says where it comes from: "(turn 412)" after a pin or an important
turn, "(turns 11-20)" after a fact line or a summary, so the model can say where it got something.

Over budget, in order: drop the oldest tail turns down to `context_min_tail_turns`, drop the oldest
facts, the oldest meta summaries, shorten the rolling summary, drop the least important earlier
turns, drop the least important profile entries, drop the least important pins, drop tail turns
down to the last, and last of all shorten that turn. Every drop is reported.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC
from functools import cached_property
from typing import Literal

from parla.kernel.tokens import estimate_tokens, truncate_to_tokens
from parla.records.chat import Chat
from parla.records.facts import FactBlock
from parla.records.pins import Pin
from parla.records.profile import ProfileEntry, ranked
from parla.records.summary import Summary
from parla.records.turn import Part, Turn

from .config import MemoryConfig
from .store.protocol import ChatsWithMemory

log = logging.getLogger(__name__)

SectionName = Literal["profile", "pins", "important", "summary", "meta", "facts", "tail"]
SECTION_ORDER: tuple[SectionName, ...] = ("profile", "pins", "important", "summary", "meta", "facts", "tail")
HEADERS: dict[SectionName, str] = {
    "profile": "=== What you know about the user (from every chat) ===",
    "pins": "=== Pinned facts ===",
    "important": "=== Important earlier moments (as said) ===",
    "summary": "=== Conversation summary ===",
    "meta": "=== Earlier periods ===",
    "facts": "=== Key facts to remember ===",
    "tail": "=== Recent conversation ===",
}


@dataclass(frozen=True)
class ContextItem:
    section: SectionName
    label: str
    text: str
    # where it comes from ("turn 412", "turns 11-20"), shown after the text; None for a recent turn
    source: str | None = None
    importance: float | None = None  # of an important earlier turn: the least important goes first

    @property
    def line(self) -> str:
        return f"{self.text} ({self.source})" if self.source else self.text

    @cached_property
    def tokens(self) -> int:
        return estimate_tokens(self.line + "\n")


@dataclass(frozen=True)
class Dropped:
    section: SectionName
    label: str
    tokens: int
    reason: str


@dataclass
class MemoryContext:
    budget: int
    sections: dict[SectionName, list[ContextItem]]
    tail: list[Turn]
    dropped: list[Dropped] = field(default_factory=list)

    def render(self, include_tail: bool = True) -> str:
        blocks = []
        for name in SECTION_ORDER:
            items = self.sections[name]
            if items and (include_tail or name != "tail"):
                blocks.append(HEADERS[name] + "\n" + "".join(item.line + "\n" for item in items))
        return "\n".join(blocks)

    @property
    def total_tokens(self) -> int:
        return estimate_tokens(self.render())

    def section_tokens(self) -> dict[SectionName, int]:
        return {name: sum(i.tokens for i in self.sections[name]) for name in SECTION_ORDER}

    def accounted_tokens(self) -> int:
        """An upper bound of `total_tokens`, cheap to keep current while trimming."""
        return sum(
            _HEADER_TOKENS[name] + sum(i.tokens for i in items) for name, items in self.sections.items() if items
        )


# A section's header line and the blank line before it.
_HEADER_TOKENS = {name: estimate_tokens(HEADERS[name] + "\n") + 1 for name in SECTION_ORDER}


# Summarised turns read for the important section: more than any budget of a few hundred tokens holds.
_IMPORTANT_LIMIT = 50

# The longest speaker label a tail line carries ("Assistant: ").
_SPEAKER_TOKENS = estimate_tokens("Assistant: ")


def _turn_item(turn: Turn) -> ContextItem:
    return ContextItem("tail", f"turn {turn.seq}", turn.transcript_line())


def build_context(
    chat: Chat,
    tail: list[Turn],
    pins: list[Pin],
    metas: list[Summary],
    facts: list[FactBlock],
    config: MemoryConfig,
    important: Sequence[Turn] = (),
    profile: Sequence[ProfileEntry] = (),
) -> MemoryContext:
    """The memory context of `chat`: `tail` are its unsummarised turns in order; `important` its
    summarised turns of note, most important first; `profile` the user's profile entries."""

    ctx = MemoryContext(
        budget=config.prompt_memory_budget,
        sections={name: [] for name in SECTION_ORDER},
        tail=list(tail),
    )
    ranked_pins = sorted(pins, key=lambda p: (-p.importance, p.created_at, p.id))
    ctx.sections["pins"] = [
        ContextItem("pins", f"pin {p.id}", f"- {p.content}", None if p.source_seq is None else f"turn {p.source_seq}")
        for p in ranked_pins
    ]
    pinned_from = {p.source_turn_id for p in pins}
    ctx.sections["profile"] = _profile(
        [e for e in ranked(profile) if e.source_turn_id is None or e.source_turn_id not in pinned_from],
        chat.id,
        config.context_profile_budget,
        ctx.dropped,
    )
    ctx.sections["important"] = _important(
        [t for t in important if t.id not in pinned_from and (t.importance or 0) >= config.context_important_min],
        config.context_important_budget,
        ctx.dropped,
    )
    if chat.rolling_summary:
        whole = f"turns 1-{chat.summarized_through}"
        ctx.sections["summary"] = [ContextItem("summary", whole, chat.rolling_summary, whole)]
    ctx.sections["meta"] = [
        ContextItem("meta", f"turns {m.range}", m.text, f"turns {m.range}")
        for m in sorted(metas, key=lambda m: m.range.start)
    ]
    ctx.sections["facts"] = _key_facts(facts, chat.summarized_through, config.context_facts_budget, ctx.dropped)
    ctx.sections["tail"] = [_turn_item(t) for t in tail]
    _fit(ctx, config.context_min_tail_turns)
    _log_trimmed(chat.id, ctx)
    return ctx


def _profile_source(entry: ProfileEntry, chat_id: str) -> str:
    said = f"{entry.said_at.astimezone(UTC):%Y-%m-%d}"
    if entry.chat_id is None:
        return f"added {said}"
    if entry.chat_id == chat_id and entry.source_seq is not None:
        return f"turn {entry.source_seq}, {said}"
    return f"another chat, {said}"


def _profile(entries: list[ProfileEntry], chat_id: str, budget: int, dropped: list[Dropped]) -> list[ContextItem]:
    """The ranked entries that fit `budget`, in their rank order."""
    kept: list[ContextItem] = []
    used = 0
    for e in entries:
        item = ContextItem("profile", f"profile {e.id}", f"- {e.content}", _profile_source(e, chat_id), e.importance)
        if used + item.tokens > budget:
            dropped.append(Dropped("profile", item.label, item.tokens, "over the profile budget"))
            continue
        kept.append(item)
        used += item.tokens
    return kept


def _important(turns: list[Turn], budget: int, dropped: list[Dropped]) -> list[ContextItem]:
    """The most important of `turns` that fit `budget`, in the order they were said."""
    kept: list[tuple[int, ContextItem]] = []
    used = 0
    for turn in turns:
        item = ContextItem("important", f"turn {turn.seq}", turn.transcript_line(), f"turn {turn.seq}", turn.importance)
        if used + item.tokens > budget:
            dropped.append(Dropped("important", item.label, item.tokens, "over the important turns budget"))
            continue
        kept.append((turn.seq, item))
        used += item.tokens
    return [item for _, item in sorted(kept, key=lambda k: k[0])]


def _log_trimmed(chat_id: str, ctx: MemoryContext) -> None:
    """One structured line when the budget cost the model recent turns or summary text: the
    signs that PROMPT_MEMORY_BUDGET is too small for how this chat is used."""
    tail = [d for d in ctx.dropped if d.section == "tail"]
    summary = [d for d in ctx.dropped if d.section == "summary"]
    if not tail and not summary:
        return
    log.info(
        "context over budget in chat %s: %d tail turns dropped or cut (%d tokens), summary shortened by %d tokens",
        chat_id,
        len(tail),
        sum(d.tokens for d in tail),
        sum(d.tokens for d in summary),
        extra={
            "event": "context_trimmed",
            "chat_id": chat_id,
            "budget": ctx.budget,
            "tokens": ctx.accounted_tokens(),
            "tail_dropped": len(tail),
            "tail_dropped_tokens": sum(d.tokens for d in tail),
            "summary_cut_tokens": sum(d.tokens for d in summary),
            "dropped": {name: sum(1 for d in ctx.dropped if d.section == name) for name in SECTION_ORDER},
        },
    )


def _key_facts(
    facts: list[FactBlock], summarized_through: int, budget: int, dropped: list[Dropped]
) -> list[ContextItem]:
    lines = [
        ContextItem("facts", f"facts {block.range}", f"- {line}", f"turns {block.range}")
        for block in sorted(facts, key=lambda b: b.range.start)
        if block.range.end <= summarized_through
        for line in block.lines
    ]
    kept: list[ContextItem] = []
    used = 0
    for item in reversed(lines):
        if used + item.tokens > budget:
            dropped.append(Dropped("facts", item.label, item.tokens, "over the facts budget"))
            continue
        kept.append(item)
        used += item.tokens
    kept.reverse()
    return kept


def _fit(ctx: MemoryContext, min_tail: int) -> None:
    s = ctx.sections
    # kept as items go: counting every item again after each one dropped made a long tail quadratic
    total = ctx.accounted_tokens()

    def over() -> bool:
        return total > ctx.budget

    def drop(section: SectionName, index: int, reason: str) -> None:
        nonlocal total
        item = s[section].pop(index)
        total -= item.tokens + (0 if s[section] else _HEADER_TOKENS[section])
        ctx.dropped.append(Dropped(section, item.label, item.tokens, reason))
        if section == "tail":
            ctx.tail.pop(index)

    while over() and len(s["tail"]) > min_tail:
        drop("tail", 0, "oldest tail turn over budget")
    while over() and s["facts"]:
        drop("facts", 0, "oldest fact over budget")
    while over() and s["meta"]:
        drop("meta", 0, "oldest meta summary over budget")
    if over() and s["summary"]:
        _shorten(ctx, "summary", 0)
        total = ctx.accounted_tokens()
    while over() and s["important"]:
        least = min(range(len(s["important"])), key=lambda i: (s["important"][i].importance or 0.0, i))
        drop("important", least, "least important earlier turn over budget")
    while over() and s["profile"]:
        drop("profile", len(s["profile"]) - 1, "least important profile entry over budget")
    while over() and s["pins"]:
        drop("pins", len(s["pins"]) - 1, "least important pin over budget")
    while over() and len(s["tail"]) > 1:
        drop("tail", 0, "oldest tail turn over budget")
    if over() and s["tail"]:
        _shorten(ctx, "tail", 0)


def _shorten(ctx: MemoryContext, section: SectionName, index: int) -> None:
    """Cut one item to what the budget leaves for it (dropping it if nothing is left). A tail
    turn is shortened as a turn, so `ctx.tail` holds exactly the text the context shows."""
    item = ctx.sections[section][index]
    keep = item.tokens - (ctx.accounted_tokens() - ctx.budget) - 1
    turn: Turn | None = None
    if section == "tail":
        spoken = truncate_to_tokens(ctx.tail[index].text, keep - _SPEAKER_TOKENS) if keep > _SPEAKER_TOKENS else ""
        turn = ctx.tail[index].model_copy(update={"parts": [Part(text=spoken)]})
        shortened = _turn_item(turn) if spoken.strip() else None
    else:
        text = truncate_to_tokens(item.text, keep) if keep > 0 else ""
        shortened = ContextItem(section, item.label, text, item.source) if text.strip() else None
    if shortened is None:
        ctx.sections[section].pop(index)
        if section == "tail":
            ctx.tail.pop(index)
        ctx.dropped.append(Dropped(section, item.label, item.tokens, "over budget"))
        return
    ctx.sections[section][index] = shortened
    if turn is not None:
        ctx.tail[index] = turn
    ctx.dropped.append(Dropped(section, item.label, item.tokens - shortened.tokens, "shortened to fit the budget"))
    if ctx.accounted_tokens() > ctx.budget:
        _shorten(ctx, section, index)


async def load_context(store: ChatsWithMemory, chat_id: str, config: MemoryConfig) -> MemoryContext:
    """Read what the context needs from the store in one go (the tail only, not the whole history)."""
    m, profile = await asyncio.gather(
        store.load_memory(chat_id, min_importance=config.context_important_min, important_limit=_IMPORTANT_LIMIT),
        store.list_profile(),
    )
    return build_context(m.chat, m.tail, m.pins, m.metas, m.facts, config, m.important, profile)
