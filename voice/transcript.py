"""Transcript assembly: the Live API's transcription fragments become one user turn and one model
turn per exchange.

Attribution rules, since transcription lags the audio:
- Input fragments that arrive before the model starts answering belong to the user turn.
- Input fragments that arrive while the model is answering are held apart: when the exchange
  completes normally they are late words of the same user turn; when the model is interrupted they
  are the start of the user's next turn (the barge-in).
- A `turn_complete` with no model output (say, right after an interruption) closes nothing; the
  user's words wait for the answer they get.
- An interrupted model turn keeps only what was played: the received text cut at the share of its
  audio that reached the speaker, at a word boundary, and is marked `interrupted`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from memory.turn import Source, Turn


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

    @property
    def model_started(self) -> bool:
        return bool(self.model) or self.model_audio_bytes > 0

    @property
    def empty(self) -> bool:
        return not (self.user or self.late_user or self.model_started)


@dataclass
class TranscriptAssembler:
    model_variant: str | None = None
    current: Exchange = field(default_factory=Exchange)

    def user_text(self, text: str, source: Source = "voice") -> None:
        """A fragment of what the user said, or a whole typed turn (`source="text"`)."""
        if not text:
            return
        if self.current.model_started:
            self.current.late_user.append(text)
        else:
            self.current.user.append(text)
            self.current.user_source = source

    def model_text(self, text: str) -> None:
        if text:
            self.current.model.append(text)

    def model_audio(self, nbytes: int) -> None:
        self.current.model_audio_bytes += nbytes

    @property
    def in_progress(self) -> bool:
        return not self.current.empty

    @property
    def model_speaking(self) -> bool:
        return self.current.model_started

    def complete(self) -> list[Turn]:
        """The model finished its turn: the exchange's turns (none when the model said nothing)."""
        ex = self.current
        if not ex.model:
            # Nothing was said back (or it was not transcribed): the words wait for the answer.
            self.current = Exchange(user=ex.user + ex.late_user, user_source=ex.user_source)
            return []
        self.current = Exchange()
        return self._turns(ex.user + ex.late_user, ex.user_source, _join(ex.model), interrupted=False)

    def interrupt(self, unplayed_bytes: int) -> list[Turn]:
        """The user barged in: the model turn keeps what was played of it; words heard during the
        answer start the next exchange."""
        ex = self.current
        self.current = Exchange(user=ex.late_user)
        if not ex.model_started:
            self.current.user = ex.user + ex.late_user
            self.current.user_source = ex.user_source
            return []
        played = 1.0 - unplayed_bytes / ex.model_audio_bytes if ex.model_audio_bytes else 1.0
        spoken = spoken_prefix(_join(ex.model), played)
        return self._turns(ex.user, ex.user_source, spoken, interrupted=True)

    def flush(self, unplayed_bytes: int = 0) -> list[Turn]:
        """Close whatever is open (the connection dropped, the session is closing): a model turn
        that did not complete counts as interrupted."""
        turns = self.interrupt(unplayed_bytes)
        rest, self.current = self.current, Exchange()
        return turns + self._turns(rest.user, rest.user_source, "", interrupted=False)

    def _turns(self, user: list[str], source: Source, model: str, interrupted: bool) -> list[Turn]:
        turns = []
        said = _join(user)
        if said:
            turns.append(Turn.of("user", said, source=source))
        if model:
            turns.append(Turn.of("model", model, interrupted=interrupted, model_variant=self.model_variant))
        return turns
