"""The model's turn, as the server's content tells it: the user's and the model's words go to the
transcript (voice.live.transcript says how fragments are attributed), the model's audio to the
speaker, and the turn ends with turnComplete, with `interrupted`, or after `model_silence_s` of
no output with no turnComplete (stray audio must not hold a switch, a GoAway or the idle timeout).

An ended model turn is held `transcript_hold_s` for transcription that trails it; with local
detection also until the speaker has played it (the floor may still cut it: then only what was
played is stored), and while the floor decides on a sound over it. Held past the transcript hold it
is kept on disk (voice.live.chat_turns); then its exchange goes to the turn saver, so the audio
path never waits on the store.

A typed turn sent, or a BLOCKING call answered, makes an answer due: conversation turns wait until
the model's turn about it has ended, or it said nothing for `model_silence_s` (voice.live.delivery)."""

from __future__ import annotations

import asyncio
import logging
import time

from google.genai import types

from ..config import VoiceConfig
from ..turns.detection import TurnDetection
from .chat_turns import ChatTurns
from .latency import VoiceToVoice
from .messages import Outbox
from .renewal import Renewal
from .send import AudioSink
from .tool_calls import ToolCalls

log = logging.getLogger(__name__)


class ModelTurn:
    def __init__(
        self,
        config: VoiceConfig,
        chat: ChatTurns,
        detection: TurnDetection,
        speaker: AudioSink | None,
        latency: VoiceToVoice,
        outbox: Outbox,
        tool_calls: ToolCalls,
        renewal: Renewal,
    ) -> None:
        self.config = config
        self.chat = chat
        self.assembler = chat.assembler
        self.detection = detection
        self.speaker = speaker
        self.latency = latency
        self.outbox = outbox
        self.tool_calls = tool_calls
        self.renewal = renewal
        # A typed turn was sent, or a BLOCKING call answered, and the model's turn about it has
        # not ended yet: conversation turns wait for it (each typed turn gets its own answer).
        self.answer_due = False
        self._silence_timer: asyncio.TimerHandle | None = None
        self._hold_timer: asyncio.TimerHandle | None = None

    @property
    def speaking(self) -> bool:
        return self.assembler.model_speaking

    def content(self, content: types.LiveServerContent) -> None:
        """A serverContent message."""
        if content.input_transcription is not None and content.input_transcription.text:
            self.assembler.user_text(content.input_transcription.text)
            self.detection.heard(content.input_transcription.text, self)
        if content.model_turn is not None:
            for part in content.model_turn.parts or []:
                blob = part.inline_data
                if blob is not None and blob.data:
                    self._play(blob.data)
        if content.output_transcription is not None and content.output_transcription.text:
            self.assembler.model_text(content.output_transcription.text)
        if content.interrupted:
            self._model_turn_over()  # before the barge-in's words begin the user's turn
            self.chat.store(self.assembler.interrupt(self.detection.interrupted()))
            self._ended()
        if content.turn_complete:
            self._over()
        elif self.assembler.model_speaking:
            self.watch_silence()

    def expect_answer(self) -> None:
        """The model answers next (a typed turn, or a BLOCKING call's result, was sent)."""
        self.answer_due = True
        self.watch_silence()

    def watch_silence(self) -> None:
        """(Re)start the clock of the model's silence: model output with no turnComplete after it
        (stray audio after the turn ended, a lost turnComplete) must not keep the model
        "speaking" for ever, which would hold idle timeouts, switches and GoAway reconnects."""
        if self._silence_timer is not None:
            self._silence_timer.cancel()
        loop = asyncio.get_running_loop()
        self._silence_timer = loop.call_later(self.config.model_silence_s, self._went_silent)

    def unheard(self, nbytes: int) -> None:
        """The floor dropped `nbytes` of the answer from the speaker."""
        if not self.assembler.unheard(nbytes):
            log.warning(
                "the user cut an answer that was stored already: it is stored as heard in full",
                extra={"event": "floor_cut_stored"},
            )

    def decided(self) -> None:
        """The floor decided on the sound over the answer: a turn held for it may go."""
        if self._hold_timer is None and self.assembler.holding:
            self._release_held()

    def connection_ended(self) -> None:
        """No turn goes on over another connection, and no late fragment of a held one comes."""
        for timer in (self._silence_timer, self._hold_timer):
            if timer is not None:
                timer.cancel()
        self._silence_timer = self._hold_timer = None
        self.answer_due = False
        self.chat.store(self.assembler.release())

    def _play(self, pcm: bytes) -> None:
        self.chat.store(self.assembler.model_audio(len(pcm)))
        ahead = self.speaker.ahead_s() if self.speaker is not None else 0.0
        self.latency.answer_audio(time.monotonic(), ahead)
        if self.speaker is not None:
            self.speaker.play(pcm)

    def _model_turn_over(self) -> None:
        if self.assembler.model_speaking:
            self.chat.events.emit("model_turn_over")

    def _over(self) -> None:
        self._model_turn_over()
        self.chat.store(self.assembler.complete())
        self._ended()
        self.renewal.turn_over()

    def _ended(self) -> None:
        """The ended turn waits `transcript_hold_s` for trailing transcription before it is
        stored (longer while the speaker plays it, see `_release_held`); a conversation turn held
        back while the model spoke may go now."""
        self.answer_due = False
        if self._hold_timer is not None:
            self._hold_timer.cancel()
            self._hold_timer = None
        if self.assembler.holding:
            self._hold_for(self.config.transcript_hold_s)
        self.outbox.wake()

    def _hold_for(self, seconds: float) -> None:
        self._hold_timer = asyncio.get_running_loop().call_later(seconds, self._release_held)

    def _release_held(self) -> None:
        self._hold_timer = None
        # The answer's fate waits for the words of the sound that stopped it: if they cut it, the
        # stored turn keeps only what was played. The floor decides by the end of that sound's
        # turn at the latest (`decided`).
        if self.detection.deciding:
            self.chat.keep_held()
            return
        # The floor may still cut what the speaker holds of the answer: the turn waits until it
        # has played, so that it keeps only what was. The connection's end releases it in any case.
        cuttable_s = self.detection.cuttable_s()
        if cuttable_s is not None:
            self.chat.keep_held()
            self._hold_for(max(cuttable_s, self.config.transcript_hold_s))
            return
        self.chat.store(self.assembler.release())

    def _went_silent(self) -> None:
        self._silence_timer = None
        if not self.assembler.model_speaking:
            if self.answer_due:  # the model said nothing about a typed turn or a tool's result
                self.answer_due = False
                self.outbox.wake()
            return
        if self.tool_calls.pending:  # the model waits for a tool mid-turn
            self.watch_silence()
            return
        log.info(
            "no model output for %.1fs and no turnComplete: the model turn counts as over",
            self.config.model_silence_s,
            extra={"event": "live_model_silent"},
        )
        self._over()
