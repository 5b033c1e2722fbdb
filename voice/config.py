"""The voice knobs: audio devices and blocks, the Live session's configuration and its reconnect
policy. `daemon.settings.Settings` extends this model, so each is also a `PARLA_*` setting."""

from __future__ import annotations

from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, Field, field_validator, model_validator

from parla.kernel.models import DEFAULT_LIVE_MODEL, DEFAULT_SPEECH_MODEL

Sensitivity = Literal["default", "high", "low"]

# The wire formats of the Live API: 16 kHz in, 24 kHz out, 16-bit little-endian mono.
MIC_RATE = 16_000
SPEAKER_RATE = 24_000
SAMPLE_BYTES = 2

DEFAULT_INSTRUCTION = (
    "You are Parla, a voice assistant on the user's desktop. Answer briefly and naturally, as in "
    "a spoken conversation.\n"
    "Rules of memory: what you know of this chat is the memory block below and the conversation "
    "itself; use nothing else. Treat the summaries as settled truth. Never reconstruct messages "
    "that were deleted or left out. When the user asks to go to another chat, call switch_chat; "
    "to start afresh, new_chat; to keep a fact for good, remember. Today's facts about the world "
    "(weather, news, opening hours, results, prices) you do not know: look them up with look_up when you "
    "have it, and never guess them."
)


class VoiceConfig(BaseModel):
    live_model: str = Field(
        DEFAULT_LIVE_MODEL,
        description="Gemini Live model for the voice loop; its family decides how the session is set up "
        "(gemini-3.8-live, -extended-thinking, 3.1 Flash Live, 2.5 native audio; others are treated as 3.8).",
    )
    live_voice: str = Field(
        "Puck",
        description="Prebuilt voice of the spoken answers (Puck, Charon, Kore, Aoede...), and of the reminders "
        "the speech model says.",
    )
    speech_model: str = Field(
        DEFAULT_SPEECH_MODEL,
        description="Gemini text-to-speech model that says reminders in the Live voice (PARLA_REMINDER_VOICE=auto).",
    )
    speech_timeout_s: float = Field(
        6.0,
        gt=0,
        description="Seconds the speech model has to answer before the offline command says the words instead.",
    )
    live_language: str | None = Field(None, description="BCP-47 language of the speech (default: the model's own).")
    live_url: str | None = Field(
        None, description="Override of the Live websocket address, wss://host[:port] (proxies, tests)."
    )
    instruction: str = Field(DEFAULT_INSTRUCTION, description="The opening of the live model's system instruction.")
    time_zone: str | None = Field(
        None,
        description="The user's IANA time zone (Europe/Rome), told to the live model with the date and time; "
        "default: the system's.",
    )
    input_device: str | int | None = Field(
        None, description="Microphone: a device name (or part of it) or index; default: the system's."
    )
    output_device: str | int | None = Field(
        None, description="Speaker: a device name (or part of it) or index; default: the system's."
    )
    audio_block_ms: int = Field(
        20,
        ge=20,
        le=50,
        multiple_of=10,
        description="Audio block length in milliseconds (capture and playback), whole 10 ms frames.",
    )
    idle_block_ms: int = Field(
        100,
        ge=20,
        le=200,
        multiple_of=10,
        description="Microphone block length in milliseconds while only the wake phrase is listened for "
        "(larger blocks wake the process less often).",
    )
    echo_cancellation: bool = Field(
        True,
        description="Remove the speaker's sound from the microphone (WebRTC AEC3), so answers on "
        "loudspeakers are not taken for the user speaking.",
    )
    mic_queue_ms: int = Field(
        2000, ge=100, description="Captured audio held while the network stalls; older blocks are dropped and counted."
    )
    playback_buffer_s: float = Field(
        300.0, gt=0, description="Model audio held for playback at most; beyond it blocks are dropped and counted."
    )
    vad_start_sensitivity: Sensitivity = Field("default", description="How readily the model hears speech start.")
    vad_end_sensitivity: Sensitivity = Field("default", description="How readily the model decides speech ended.")
    vad_silence_ms: int | None = Field(
        None, ge=0, description="Silence that ends the user's turn, in ms (default: the model's own)."
    )
    vad_prefix_padding_ms: int | None = Field(
        None, ge=0, description="Speech needed before a start of speech is committed, in ms (default: the model's)."
    )
    turn_detection: Literal["service", "local"] = Field(
        "service",
        description="Who decides when the user has the floor: the Live service's automatic activity detection, "
        "or Parla's local voice activity detector (Silero VAD), which pauses the answer for a sound and cuts it "
        "only for sustained speech.",
    )
    floor_threshold: float = Field(
        0.3, gt=0, lt=1, description="Local detection: speech probability from which a 32 ms frame is speech."
    )
    floor_start_ms: int = Field(
        64, ge=32, description="Local detection: speech in a row that starts the user's turn (or pauses an answer)."
    )
    floor_end_silence_ms: int = Field(
        1500,
        ge=100,
        description="Local detection: silence after speech that ends the user's turn (long enough to keep "
        "the floor through a hesitation; python -m bench.turns measures the trade-off).",
    )
    floor_end_model: Literal["none", "smart-turn"] = Field(
        "none",
        description="Local detection: none (the silence window alone ends a turn), or smart-turn: Pipecat's "
        "end-of-turn model (pip install 'parla[turn]' and pip install --no-deps pipecat-ai==1.14.0) asked after a short silence ends the turn when it says the "
        "user has finished. Off by default: on bench.turns' corpus it ends the turn inside most mid-sentence "
        "hesitations. Without the package, turns end by silence and the log says so.",
    )
    floor_end_check_ms: int = Field(
        200,
        ge=32,
        description="Local detection: silence after which the end-of-turn model is asked whether the user has "
        "finished (and the transcript's last word judged, with PARLA_FLOOR_END_WORDS); if it says so the turn "
        "ends, else it ends after PARLA_FLOOR_END_SILENCE_MS.",
    )
    floor_end_recheck_ms: int = Field(
        0,
        ge=0,
        description="Local detection: after the end-of-turn model said the user has not finished, ask it again "
        "after this much more silence (and again, until the silence window ends the turn); 0: once per pause.",
    )
    floor_end_threshold: float = Field(
        0.5,
        gt=0,
        lt=1,
        description="Local detection: the end-of-turn model's probability from which the user has finished.",
    )
    floor_end_words: bool = Field(
        False,
        description="Local detection: the service's transcript of the turn helps end it. Once the user has been "
        "quiet PARLA_FLOOR_END_CHECK_MS and a piece of the transcript has come since, a last word a sentence does "
        "not end on (PARLA_FLOOR_END_GOES_ON) keeps the floor until the silence window; any other ends the turn "
        "there. With the end-of-turn model too, the model decides and such a word only keeps the floor. Off by "
        "default: on bench.turns' corpus most hesitations come after a word a sentence can end on.",
    )
    floor_end_goes_on: str = Field(
        "a,an,the,and,or,but,so,because,if,than,of,to,for,with,from,at,by,about,my,your,his,her,our,their,i,we,"
        "um,uh,er,erm",
        description="Local detection, with floor_end_words: the words (comma-separated, lower case) a sentence "
        "does not end on: articles, conjunctions, prepositions that are not particles, possessives, subject "
        "pronouns, fillers.",
    )
    floor_barge_in_ms: int = Field(
        200,
        ge=32,
        description="Local detection: speech over an answer that cuts it; shorter sounds only pause it a moment.",
    )
    floor_near_end_db: float = Field(
        6.0,
        gt=0,
        description="Local detection: how far the microphone must be above the answer's expected echo (in dB, "
        "judged beside the echo canceller, before its suppressor) for someone to be talking over the answer; "
        "that pauses it at once.",
    )
    floor_near_end_ms: int = Field(
        30, ge=10, description="Local detection: how long the microphone must stay that far above the echo."
    )
    floor_below_user_db: float = Field(
        6.0,
        ge=0,
        description="Local detection: a sound over the answer more than this many dB under the user's own voice "
        "(its level learnt from the user's turns) is not taken for the user, and neither pauses nor cuts the "
        "answer: a TV or people across the room. 0: off.",
    )
    floor_near_end_tail_ms: int = Field(
        200,
        ge=10,
        description="Local detection: the echo path the near-end judgement's own linear filter models (ms of "
        "the room's echo after the speaker).",
    )
    floor_near_end_step: float = Field(
        0.3, gt=0, le=1, description="Local detection: the near-end filter's adaptation step (normalised per bin)."
    )
    floor_near_end_adapt_below_db: float = Field(
        3.0,
        gt=0,
        description="Local detection: the near-end filter adapts only while the microphone is within this of the "
        "expected echo (double talk does not teach it a wrong echo path).",
    )
    floor_near_end_warm_s: float = Field(
        0.5,
        ge=0,
        description="Local detection: played sound the near-end filter learns on, at least, before its judgement "
        "is trusted (Silero's onset holds the answer until then, and until the filter has learnt an echo path).",
    )
    floor_near_end_decay_db_per_s: float = Field(
        75.0,
        gt=0,
        description="Local detection: how fast the expected echo may fall after the speaker stops (the room's "
        "reverberation).",
    )
    floor_confirm_ms: int = Field(
        150,
        ge=0,
        description="Local detection: how long an answer paused by the near-end judgement waits for speech to "
        "show once the speaker is quiet (the canceller lets the user's voice through then) before it goes on; "
        "a pause Silero started ends at the first gap.",
    )
    floor_prefix_ms: int = Field(
        300, ge=0, description="Local detection: audio from before the detected onset sent with the user's turn."
    )
    floor_words: bool = Field(
        True,
        description="Local detection: a sound over the answer that reaches the barge-in window cuts it only if the "
        "service's transcript of it holds a word other than a backchannel; a wordless or backchannel-only one lets "
        "the answer go on from where it paused. Off: the barge-in window alone cuts it.",
    )
    floor_words_wait_ms: int = Field(
        600,
        ge=0,
        description="Local detection, with floor_words: quiet after a sound over the answer, without a word that "
        "cuts it in the transcript, after which the answer goes on (a word that comes later still cuts it).",
    )
    floor_cut_ms: int = Field(
        0,
        ge=0,
        description="Local detection, with floor_words: speech over the answer this long (in a row, from the "
        "pause) cuts it at once, without waiting for its words; shorter sounds wait for them. 0: off, the words "
        "alone decide.",
    )
    floor_backchannels: str = Field(
        "mm,hmm,mhm,uh,huh,um,ah,oh,yeah,yep,yes,okay,ok,right,sure,alright,i,see,got,it",
        description="Local detection, with floor_words: the words (comma-separated, lower case) that do not cut "
        "the answer when all of a sound's transcript is made of them; hyphenated words count as their parts "
        "(mm-hmm, uh-huh).",
    )
    compression_trigger_tokens: int = Field(
        64_000, ge=1000, description="Context size at which the Live session compresses its history (sliding window)."
    )
    compression_target_tokens: int = Field(
        32_000, ge=500, description="Context size the sliding window compresses down to."
    )
    live_setup_timeout_s: float = Field(
        10.0,
        gt=0,
        description="Seconds a new Live connection may take to complete its setup; then it counts as failed.",
    )
    model_silence_s: float = Field(
        5.0,
        gt=0,
        description="Seconds without model output after which an unfinished model turn counts as over "
        "(stray audio after the turn ended, a lost turnComplete).",
    )
    transcript_hold_s: float = Field(
        0.5,
        ge=0,
        description="Seconds a finished model turn waits for transcription fragments that trail it "
        "before it is stored (the Live API does not order transcriptions with turnComplete).",
    )
    reconnect_attempts: int = Field(
        5, ge=1, description="Consecutive failed connections before the session gives up and tells the user."
    )
    reconnect_delay: float = Field(0.5, ge=0, description="First reconnect delay in seconds; doubles per failure.")
    reconnect_max_delay: float = Field(8.0, ge=0, description="Longest reconnect delay in seconds.")
    reconnect_stable_s: float = Field(
        60.0, ge=0, description="Seconds a connection must last before the failure count starts again."
    )
    goaway_margin_s: float = Field(
        3.0, ge=0, description="After a GoAway, reconnect this long before the deadline unless the model is speaking."
    )
    resume_handle_max_age_s: float = Field(
        6900.0, gt=0, description="Age after which a resumption handle is not tried (the API keeps them 2 h)."
    )
    save_drain_s: float = Field(10.0, gt=0, description="Seconds a closing session waits for its turns to be stored.")
    switch_hold_s: float = Field(
        30.0,
        gt=0,
        description="Microphone audio held, in seconds, from a switch's decision until the other chat's session "
        "opens (what is said then belongs to that chat); beyond it the oldest is dropped and the log says so.",
    )
    # websockets' own defaults are 20 s and 20 s; the service's pongs come later than that while it
    # still streams (googleapis/python-genai#2935, google/adk-python#3067), and the client then
    # drops a working session with 1011 "keepalive ping timeout".
    latency_speech_rms: float = Field(
        400.0,
        gt=0,
        description="Loudness (RMS of 16-bit samples, after echo cancellation) over which a microphone "
        "block counts as speech when timing voice-to-voice (the end of the user's speech).",
    )
    latency_growth_ratio: float = Field(
        1.5,
        gt=1,
        description="How many times slower the service's part may get within a session before the log says so.",
    )
    live_ping_interval_s: float = Field(
        20.0, gt=0, description="Seconds between websocket pings on a Live connection (they keep NAT paths open)."
    )
    live_ping_timeout_s: float | None = Field(
        60.0,
        gt=0,
        description="Seconds a ping may wait for its pong before the Live connection counts as dead "
        "(unset: never; a dead link is then found only when sending fails).",
    )

    @field_validator("time_zone")
    @classmethod
    def _known_zone(cls, zone: str | None) -> str | None:
        if zone:
            try:
                ZoneInfo(zone)
            except (ZoneInfoNotFoundError, ValueError):
                raise ValueError(f"unknown time zone {zone!r}; use an IANA name such as Europe/Rome") from None
        return zone

    @model_validator(mode="after")
    def _consistent(self) -> VoiceConfig:
        if self.compression_target_tokens >= self.compression_trigger_tokens:
            raise ValueError(
                f"compression_target_tokens ({self.compression_target_tokens}) must be below "
                f"compression_trigger_tokens ({self.compression_trigger_tokens}), or compression would not shrink anything"
            )
        return self
