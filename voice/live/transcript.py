"""Transcript assembly: the Live API's transcription fragments become one user turn and one model
turn per exchange.

Transcriptions carry no ordering guarantee relative to the model's audio, `turnComplete` or the
next turn, so an exchange is not stored the moment its model turn ends. The design: a model turn
that ends (turnComplete, or `interrupted`) is *held* as the closing exchange until the caller
releases it, a short while later (`transcript_hold_s`), when the connection ends, or at once when
the next model turn starts speaking. Attribution follows the order of turns, not arrival alone:
- A model fragment belongs to the newest model turn that has begun: while the next turn has no
  model output yet, a fragment is a late piece of the closing turn (it joins it, and never makes
  the session "speaking"); once the next model turn's audio has begun, fragments are its own.
- A user fragment before the model starts answering belongs to the user turn. One that arrives
  while the model answers is held apart: when the answer completes it is a late word of the same
  user turn; when the model is interrupted it is the start of the user's next turn (the barge-in).
- A user fragment after the model's turn ended starts the user's next turn (a new question glued
  onto an old one is worse than a late word split off), with one exception the order of turns
  settles: an answer that completed while no word of the user was heard yet answered words still
  to come, so until the next turn begins, fragments are that answer's user turn.
- A `turn_complete` with no model output (say, right after an interruption) closes nothing; the
  user's words wait for the answer they get. `generationComplete` closes nothing either: the
  transcript and `turnComplete` follow it.
- A typed turn is a whole turn: words still waiting for an answer when it is sent (an earlier
  typed turn the model did not answer, voice heard before it) become a turn of their own. It is
  stored as the turn the caller made (its id says which stored turn it is), with any words heard
  while the model answered it added.
- An interrupted model turn keeps only what was played: its text (late fragments included) cut
  at the share of its audio that reached the speaker, at a word boundary, marked `interrupted`.
  Parla's local floor may drop what the speaker holds before the service's `interrupted` comes
  (a barge-in) or after it (the words of the sound decided later): `unheard` counts those bytes
  against the answer under way, or else the one held for late fragments.
- `on_user_turn` is told when a user turn begins by these rules: the first words of an exchange
  (before or while the model answers), the words of a barge-in once the model is cut off, a typed
  turn, and the first words after an answer that ended with no word of the user heard (the late
  transcript of what it answered, or the user's reply to it: an answer the model gave to a tool's
  result answered no words, and a quick reply lands here). A late word of a turn already begun
  begins none.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from parla.records.turn import Part, Source, TokenUsage, Turn, WebSource, new_id


def _join(fragments: list[str]) -> str:
    """Fragments carry their own spacing (the API sends " word" pieces); normalise runs of spaces."""
    return " ".join("".join(fragments).split())


def spoken_prefix(text: str, played: float) -> str:
    """The part of `text` spoken when `played` (0..1) of its audio was heard, ending on a word."""
    if played >= 1.0:
        return text
    if played <= 0.0:
        return ""
    cut = round(len(text) * played)
    if cut < len(text) and not text[cut].isspace():
        space = text.rfind(" ", 0, cut)
        cut = max(space, 0)
    return text[:cut].rstrip()


@dataclass
class Exchange:
    user: list[str] = field(default_factory=list)
    late_user: list[str] = field(default_factory=list)
    model: list[str] = field(default_factory=list)
    model_audio_bytes: int = 0
    user_source: Source = "voice"
    played: float | None = None  # share of the model's audio heard, once it was interrupted
    unplayed_bytes: int = 0  # of the model's audio, dropped from the speaker unplayed
    words_due: bool = False  # the answer completed before any word of the user was heard
    usage: TokenUsage | None = None  # what the service reported for the model's answer
    typed: Turn | None = None  # a typed turn the user's words (`user`) follow, kept exactly
    sources: list[WebSource] = field(default_factory=list)  # pages the model's answer came from
    # The ids its turns are stored with, fixed up front: a version kept on disk while the exchange
    # is held and the final version are the same turns (appends are idempotent by id).
    user_id: str = field(default_factory=new_id)
    model_id: str = field(default_factory=new_id)
    kept_held: bool = False  # its turns were given to be kept on disk while it is held

    @property
    def said(self) -> bool:
        return bool(self.user or self.typed)

    def take_user(self, other: Exchange) -> None:
        """`other`'s user words, still unanswered, go before this exchange's own."""
        self.user[:0] = other.user
        if other.said:
            self.user_source = other.user_source
            self.typed = self.typed or other.typed

    def heard_share(self) -> float:
        if not self.model_audio_bytes:
            return 1.0
        return max(0.0, 1.0 - self.unplayed_bytes / self.model_audio_bytes)

    @property
    def model_started(self) -> bool:
        return bool(self.model) or self.model_audio_bytes > 0

    @property
    def empty(self) -> bool:
        return not (self.said or self.late_user or self.model_started)


@dataclass
class TranscriptAssembler:
    model_variant: str | None = None
    on_user_turn: Callable[[], None] = field(default=lambda: None, repr=False)
    current: Exchange = field(default_factory=Exchange)
    closing: Exchange | None = None  # a model turn that ended, waiting for late fragments
    _released_kept: list[str] = field(default_factory=list, init=False)  # see `released_kept`

    def user_text(self, text: str) -> None:
        """A fragment of what the user said."""
        if not text:
            return
        held = self.closing
        if held is not None and held.words_due and self.current.empty:
            if not held.user:  # late words of what it answered, or the user's quick reply to it
                self.on_user_turn()
            held.user.append(text)  # the words the held answer answered, transcribed late
            return
        begins = not (self.current.said or self.current.late_user)
        if self.current.model_started:
            self.current.late_user.append(text)
        else:
            self.current.user.append(text)
            self.current.user_source = "voice"
        if begins:
            self.on_user_turn()

    def typed(self, turn: Turn) -> list[Turn]:
        """A typed user turn, sent while the model is not speaking. Returns the words it closes
        as a turn of their own, for storing."""
        waiting, self.current = self.current, Exchange(user_source="text", typed=turn)
        self.on_user_turn()
        return self._turns(waiting, waiting.user + waiting.late_user)

    def model_text(self, text: str) -> None:
        if not text:
            return
        if self.closing is not None and not self.current.model_started:
            self.closing.model.append(text)  # a late piece of the turn that ended
        else:
            self.current.model.append(text)

    def usage(self, usage: TokenUsage) -> None:
        """The service's token count for the model's answer. It comes with the turn's end or
        just after it, so it belongs to the answer under way, else to the one that just ended;
        a later report for the same answer replaces an earlier one (each is the answer's total)."""
        if self.current.model_started or self.closing is None:
            self.current.usage = usage
        else:
            self.closing.usage = usage

    def cite(self, sources: list[WebSource]) -> None:
        """Web pages a tool's answer came from, for the model turn under way (or about to begin:
        the model waits for a blocking tool before it answers)."""
        known = {s.uri for s in self.current.sources}
        self.current.sources += [s for s in sources if s.uri not in known]

    def model_audio(self, nbytes: int) -> list[Turn]:
        """The model's voice; when it starts a new turn, the closing one can take no more
        fragments and is returned for storing."""
        released = self.release() if nbytes and not self.current.model_started else []
        self.current.model_audio_bytes += nbytes
        return released

    @property
    def in_progress(self) -> bool:
        return not self.current.empty or self.closing is not None

    @property
    def model_speaking(self) -> bool:
        return self.current.model_started

    @property
    def holding(self) -> bool:
        return self.closing is not None

    @property
    def held_turns(self) -> int:
        """Turns the held exchange will give when released (not stored yet, so not safe yet)."""
        ex = self.closing
        if ex is None or (not ex.model and ex.played is None):
            return 0
        return (1 if ex.said else 0) + 1

    def complete(self) -> list[Turn]:
        """The model finished its turn: it is held for late fragments (see `release`). Returns
        the turns of an exchange held before it, now final."""
        ex = self.current
        if not ex.model_started:
            return []  # nothing was said back: the words wait for the answer
        released = self.release()
        self.current = Exchange()
        ex.user += ex.late_user
        ex.late_user = []
        ex.words_due = not ex.said
        if ex.unplayed_bytes:  # the service finished it, but the speaker was told to drop some of it
            ex.played = ex.heard_share()
        self.closing = ex
        return released

    def interrupt(self, unplayed_bytes: int) -> list[Turn]:
        """The user barged in: the model turn is held, to keep what was played of it; words
        heard during the answer start the next exchange."""
        ex = self.current
        if not ex.model_started:
            return []
        released = self.release()
        self.current = Exchange(user=ex.late_user)
        if ex.late_user and ex.said:  # words over the answer begin the next turn (unsaid: they began this one)
            self.on_user_turn()
        ex.late_user = []
        ex.unplayed_bytes += unplayed_bytes
        ex.played = ex.heard_share()
        self.closing = ex
        return released

    def unheard(self, unplayed_bytes: int) -> bool:
        """The speaker dropped this much of the model's audio unplayed, apart from the service's
        `interrupted`: it counts against the answer under way (its share is set when it ends),
        else the ended one still held. False when neither is left to take it (stored already)."""
        if self.current.model_started:
            self.current.unplayed_bytes += unplayed_bytes
            return True
        ex = self.closing
        if ex is None or not ex.model_audio_bytes:
            return False
        ex.unplayed_bytes += unplayed_bytes
        ex.played = ex.heard_share()
        return True

    def keep_held(self) -> list[Turn]:
        """The held exchange's turns as `release` would give them now (the same turns, by id),
        to keep on disk while it is held; once per exchange ([] after that, or with nothing to
        keep). The ids of the turns given are in `released_kept` once the exchange is released."""
        ex = self.closing
        if ex is None or ex.kept_held or not self.held_turns:
            return []
        ex.kept_held = True
        return self._final(ex)

    def held_with(self, ids: set[str]) -> list[Turn]:
        """The held exchange's turns as they would be stored now, if one of them has one of these ids."""
        ex = self.closing
        if ex is None or not self.held_turns:
            return []
        turns = self._final(ex)
        return turns if any(t.id in ids for t in turns) else []

    def released_kept(self) -> list[str]:
        """Ids of turns `keep_held` gave whose exchange was released since the last call: its
        final version (which may drop a turn, say an answer cut before a word was heard) is on
        its way to the store, so the kept version may be forgotten once that is stored."""
        ids, self._released_kept = self._released_kept, []
        return ids

    def release(self) -> list[Turn]:
        """The held exchange's turns, final now. A model turn that was not transcribed at all
        stores nothing of itself, and its user's words wait for the next answer."""
        ex, self.closing = self.closing, None
        if ex is None:
            return []
        if ex.kept_held:
            self._released_kept += [ex.typed.id if ex.typed is not None else ex.user_id, ex.model_id]
        if not ex.model and ex.played is None:
            if ex.typed is not None and self.current.typed is not None:  # typed turns stay whole
                return self._turns(ex, ex.user)
            self.current.take_user(ex)
            return []
        return self._final(ex)

    def _final(self, ex: Exchange) -> list[Turn]:
        model = _join(ex.model)
        if ex.played is not None:
            model = spoken_prefix(model, ex.played)
        return self._turns(ex, ex.user, model, interrupted=ex.played is not None)

    def flush(self, unplayed_bytes: int = 0) -> list[Turn]:
        """Close whatever is open (the connection dropped, the session is closing): a model turn
        that did not complete counts as interrupted."""
        turns = self.interrupt(unplayed_bytes) + self.release()
        rest, self.current = self.current, Exchange()
        return turns + self._turns(rest, rest.user)

    def _turns(self, ex: Exchange, user: list[str], model: str = "", interrupted: bool = False) -> list[Turn]:
        """The turns of `ex` with these words of the user's and this much of the model's answer."""
        turns = []
        said = _join(user)
        typed = ex.typed
        if typed is not None:  # its text as typed, then any words heard after it
            turns.append(typed.model_copy(update={"parts": [Part(text=f"{typed.text} {said}")]}) if said else typed)
        elif said:
            turns.append(Turn.of("user", said, source=ex.user_source, id=ex.user_id))
        if model:
            turns.append(
                Turn.of(
                    "model",
                    model,
                    id=ex.model_id,
                    interrupted=interrupted,
                    model_variant=self.model_variant,
                    usage=ex.usage,
                    sources=ex.sources,
                )
            )
        return turns
