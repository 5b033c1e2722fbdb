"""Auto pins: the user's durable statements (health, family, dates, decisions, preferences) pinned
without being asked, each with its importance and the turn it was said in. The same fact is never
pinned twice: a candidate is left out when an existing pin (manual or automatic, forgotten or not)
says the same, and an automatic pin's id is derived from the chat and the fact, so two runs that
find it at once write one row."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass

from parla.kernel.patterns import lazy_pattern
from parla.records.pins import Pin
from parla.records.turn import Turn

from .importance import durable_statements, fact_key
from .pieces import READ_AT_ONCE, split_text
from .text import content_words

# Words that frame a pin rather than say its fact ("The user said: ...", "User is ...").
_FRAME = frozenset({"user", "users", "said", "says", "remember", "the"})
_FRAME_TEXT = 'The user said: "{}"'
_FRAMED = lazy_pattern(r'The user said: "(.+)"', re.DOTALL)
_NAMESPACE = uuid.UUID("6f1d3c52-8f7e-4d8e-9a43-5b0f2f0a7c11")
# A pasted document can hold thousands of sentences the rules take for the user's own, and each
# candidate is dated and compared with every other: a turn gives at most this many. A spoken turn
# says one or two things worth pinning.
_PINS_A_TURN = 5


@dataclass(frozen=True)
class PinCandidate:
    """A statement a detector considers worth pinning, and the turn it comes from."""

    content: str
    importance: float
    source: Turn
    # about the user in any chat (the profile takes it) or about this chat's topic only (a pin)
    about_user: bool = True
    # what it is about, when the detector named it: a newer entry of the same subject supersedes it
    subject: str | None = None


def offline_candidates(turns: Iterable[Turn]) -> list[PinCandidate]:
    """The rule detector: the durable statements of each user's turn, in its own words, at most
    `_PINS_A_TURN` of them (the most important, in the order said); the turn is read in pieces of
    at most `READ_AT_ONCE` characters (see `memory.language.pieces`)."""
    found = []
    for turn in turns:
        if turn.role != "user":
            continue
        said = [s for piece in split_text(turn.text, READ_AT_ONCE) for s in durable_statements(piece)]
        kept = sorted(sorted(range(len(said)), key=lambda i: -said[i].importance)[:_PINS_A_TURN])
        found += [PinCandidate(_FRAME_TEXT.format(said[i].text), said[i].importance, turn) for i in kept]
    return found


def unframed(content: str) -> str:
    """The user's own words of a rule detector's candidate, else the content as it is."""
    match = _FRAMED().fullmatch(content)
    return match.group(1) if match else content


def _fact_words(content: str) -> frozenset[str]:
    return frozenset(w for w in content_words(fact_key(content)) if w not in _FRAME)


def same_fact(a: str, b: str) -> bool:
    """Equal once case, punctuation and contractions are set aside, or one's words all in the other's."""
    if fact_key(a) == fact_key(b):
        return True
    wa, wb = _fact_words(a), _fact_words(b)
    return bool(wa) and bool(wb) and (wa <= wb or wb <= wa)


def auto_pin_id(chat_id: str, content: str) -> str:
    return str(uuid.uuid5(_NAMESPACE, f"{chat_id}\n{fact_key(content)}"))


def unsaid(candidates: Iterable[PinCandidate], known: Iterable[str]) -> list[PinCandidate]:
    """The candidates that say something none of `known` (nor an earlier candidate) says."""
    seen = list(known)
    out = []
    for c in candidates:
        if not any(same_fact(c.content, k) for k in seen):
            seen.append(c.content)
            out.append(c)
    return out


def new_auto_pins(chat_id: str, candidates: Iterable[PinCandidate], existing: Iterable[Pin]) -> list[Pin]:
    """Pins for the candidates that say something no existing pin (nor an earlier candidate) says."""
    return [
        Pin(
            id=auto_pin_id(chat_id, c.content),
            chat_id=chat_id,
            content=c.content,
            importance=c.importance,
            pin_type="auto",
            source_turn_id=c.source.id,
            source_seq=c.source.seq,
        )
        for c in unsaid(candidates, (p.content for p in existing))
    ]


def said_in(content: str, turns: list[Turn]) -> Turn:
    """The turn of `turns` (not empty) a statement about them most likely comes from: the one
    that says most of its words, the later on a tie (the user's last word on it), else the last."""
    want = _fact_words(content)
    return max(reversed(turns), key=lambda t: len(want & _fact_words(t.text)))


def find_sources(pins: Iterable[Pin], turns: list[Turn]) -> list[Pin]:
    """Pins without a source turn (a `remember` whose asking turn was not yet stored when it was
    pinned) given the user's turn among `turns` that says most of their words, when one does."""
    users = [(t, _fact_words(t.text)) for t in turns if t.role == "user"]
    linked = []
    for pin in pins:
        want = _fact_words(pin.content)
        if pin.source_turn_id is not None or not want:
            continue
        best = max(users, key=lambda u: (len(want & u[1]), u[0].seq), default=None)
        if best is not None and len(want & best[1]) * 2 >= len(want):
            linked.append(pin.model_copy(update={"source_turn_id": best[0].id, "source_seq": best[0].seq}))
    return linked
