"""Text said in Parla's own voice by a Gemini speech (text-to-speech) model: the prebuilt voice the
Live session speaks with, for what Parla says with no conversation open (a reminder at its time).

The request and the answer, from the docs (read November 2026):
- https://ai.google.dev/gemini-api/docs/speech-generation and the model page
  https://ai.google.dev/gemini-api/docs/models/gemini-3.8-flash-lite-tts: one generateContent on the
  speech model with `generationConfig.responseModalities: ["AUDIO"]` and the voice in
  `speechConfig.voiceConfig`. The 30 prebuilt voices (Puck, Charon, Kore, Aoede, Zephyr...) are the
  ones the Live API speaks with, so `PARLA_LIVE_VOICE` names the same voice in both.
- https://docs.cloud.google.com/gemini-enterprise-agent-platform/models/text-to-speech/migration-guide:
  the 3.8 models read the text as a verbatim transcript (an instruction written into it, "Say
  cheerfully: ...", may be read aloud), so the words go alone; they refuse temperature, topP and topK
  (INVALID_ARGUMENT), so none is sent; `prebuiltVoiceConfig.voiceName` still names a prebuilt voice
  (`voiceConfig.voice` also takes designed and replicated ones). A unary request answers a whole WAV
  file (16-bit PCM, 24 kHz, mono); the earlier models answer raw 16-bit PCM at 24 kHz
  (`audio/L16;codec=pcm;rate=24000`). Both are read here.
- Limits: 8,192 input tokens for gemini-3.8-flash-lite-tts (far above a reminder's 2,000 characters);
  rate limits per project and model (requests and tokens a minute, requests a day:
  https://ai.google.dev/gemini-api/docs/rate-limits), a 429 past them. A reminder is one request.
"""

from __future__ import annotations

import re

from google import genai
from google.genai import errors, types

from parla.kernel.transport import transport_errors

from ..config import SPEAKER_RATE
from ..errors import SpeechFailed
from .wav import speaker_pcm, speaker_pcm_of_wav

_RAW_RATE = re.compile(r"rate=(\d+)")
_UNREACHABLE = transport_errors()


class SpeechModel:
    def __init__(self, client: genai.Client, model: str, voice: str, language: str | None = None) -> None:
        self.client = client
        self.model = model
        self.voice = voice
        self.language = language

    def __str__(self) -> str:
        return f"the speech model {self.model} (voice {self.voice})"

    def late(self, timeout_s: float) -> str:
        return f"the speech model {self.model} (voice {self.voice}) did not answer within {timeout_s:g} s"

    async def spoken(self, text: str) -> bytes:
        """`text` said by the model, as mono int16 at the speaker's rate; `SpeechFailed` when the
        model cannot be asked, refuses, or answers no whole audio."""
        voice = types.VoiceConfig(prebuilt_voice_config=types.PrebuiltVoiceConfig(voice_name=self.voice))
        config = types.GenerateContentConfig(
            response_modalities=[types.Modality.AUDIO],
            speech_config=types.SpeechConfig(voice_config=voice, language_code=self.language),
        )
        try:
            response = await self.client.aio.models.generate_content(
                model=self.model, contents=[types.Content(role="user", parts=[types.Part(text=text)])], config=config
            )
        except errors.APIError as e:
            raise SpeechFailed(
                f"the speech model {self.model} (voice {self.voice}) refused the words with {e.code}: {e.message}"
            ) from e
        except _UNREACHABLE as e:
            raise SpeechFailed(
                f"the speech model {self.model} (voice {self.voice}) cannot be reached ({type(e).__name__}: {e})"
            ) from e
        candidate = response.candidates[0] if response.candidates else None
        if candidate is None or candidate.finish_reason not in (None, types.FinishReason.STOP):
            why = candidate.finish_reason if candidate is not None else "no candidate"
            raise SpeechFailed(f"the speech model {self.model} (voice {self.voice}) gave no whole answer ({why})")
        audio = [p.inline_data for p in (candidate.content.parts if candidate.content else None) or [] if p.inline_data]
        if len(audio) != 1 or not audio[0].data:
            raise SpeechFailed(
                f"the speech model {self.model} (voice {self.voice}) answered {len(audio)} audio parts, not one"
            )
        return self._pcm(audio[0].mime_type or "", audio[0].data)

    def _pcm(self, mime: str, data: bytes) -> bytes:
        kind = mime.split(";")[0].strip().lower()
        if kind in ("audio/wav", "audio/x-wav", "audio/wave"):
            return speaker_pcm_of_wav(data, str(self))
        if kind in ("audio/l16", "audio/pcm"):
            rate = _RAW_RATE.search(mime)
            return speaker_pcm(data, int(rate.group(1)) if rate else SPEAKER_RATE)
        raise SpeechFailed(
            f"the speech model {self.model} answered {mime or 'audio of no type'}, not WAV or 16-bit PCM"
        )
