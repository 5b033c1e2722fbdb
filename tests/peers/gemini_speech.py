"""The speech (text-to-speech) models of the Gemini REST emulator (`gemini_rest.py`).

They answer generateContent as the docs say (read November 2026:
https://ai.google.dev/gemini-api/docs/speech-generation, the Gemini 3.8 Flash-Lite TTS model page
https://ai.google.dev/gemini-api/docs/models/gemini-3.8-flash-lite-tts and the migration guide
https://docs.cloud.google.com/gemini-enterprise-agent-platform/models/text-to-speech/migration-guide):
the request's `generationConfig.responseModalities` must be `["AUDIO"]`, its voice one of the 30
prebuilt voices (`speechConfig.voiceConfig.prebuiltVoiceConfig.voiceName`, or `voiceConfig.voice`),
its text within the model's 8,192 input tokens; the 3.8 models refuse temperature, topP and topK
(INVALID_ARGUMENT). The answer is one `inlineData` part: from the 3.8 models a whole WAV file
(`audio/wav`: 16-bit PCM, 24 kHz, mono), from earlier ones raw PCM (`audio/L16;codec=pcm;rate=24000`).
The audio is real speech of the request's text: flite's, resampled to 24 kHz, one flite voice per
prebuilt voice name, so a test can tell which voice spoke. A text model asked for audio is refused.
"""

from __future__ import annotations

import base64
import io
import re
import subprocess
import tempfile
import wave
from pathlib import Path
from typing import Any

import numpy as np

SPEECH_MODELS = frozenset({"gemini-3.8-flash-tts", "gemini-3.8-flash-lite-tts", "gemini-3.1-flash-tts-preview"})
# Those that answer a whole WAV file (the others raw PCM).
_WAV_ANSWER = {"gemini-3.8-flash-tts", "gemini-3.8-flash-lite-tts"}
# The 3.8 speech models refuse these generation settings.
_REFUSED_BY_3_8_SPEECH = {"temperature", "topP", "topK"}
SPEECH_INPUT_TOKENS = 8192
SPEECH_RATE = 24_000
# The 30 prebuilt voices (the speech-generation guide's list; the Live API's voices are among them).
VOICES = [
    "Achernar",
    "Achird",
    "Algenib",
    "Algieba",
    "Alnilam",
    "Aoede",
    "Autonoe",
    "Callirrhoe",
    "Charon",
    "Despina",
    "Enceladus",
    "Erinome",
    "Fenrir",
    "Gacrux",
    "Iapetus",
    "Kore",
    "Laomedeia",
    "Leda",
    "Orus",
    "Pulcherrima",
    "Puck",
    "Rasalgethi",
    "Sadachbia",
    "Sadaltager",
    "Schedar",
    "Sulafat",
    "Umbriel",
    "Vindemiatrix",
    "Zephyr",
    "Zubenelgenubi",
]
# flite's voices, one per prebuilt voice (by its place in the list), so the speakers differ
_FLITE_VOICES = ("slt", "kal16", "awb", "rms")


def flite_voice(voice: str) -> str:
    return _FLITE_VOICES[VOICES.index(voice) % len(_FLITE_VOICES)]


def spoken_pcm(text: str, voice: str) -> bytes:
    """`text` said by flite in the voice standing for `voice`, as 24 kHz mono int16."""
    with tempfile.TemporaryDirectory(prefix="gemini-speech-") as folder:
        words, out = Path(folder) / "words.txt", Path(folder) / "speech.wav"
        words.write_text(text, encoding="utf-8")
        subprocess.run(["flite", "-voice", flite_voice(voice), "-f", str(words), "-o", str(out)], check=True)
        with wave.open(str(out)) as w:
            rate = w.getframerate()
            samples = np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.float64)
    n = int(len(samples) * SPEECH_RATE / rate)
    resampled = np.interp(np.arange(n) * rate / SPEECH_RATE, np.arange(len(samples)), samples)
    return np.clip(np.round(resampled), -32768, 32767).astype("<i2").tobytes()


def _field(message: dict[str, Any], name: str) -> Any:
    """A field of a request read by its JSON name (lowerCamel) or its proto name (snake_case)."""
    snake = re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()
    return message.get(name, message.get(snake))


def wav_file(pcm: bytes, rate: int = SPEECH_RATE) -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(pcm)
    return out.getvalue()


def refusal(model: str, body: dict[str, Any]) -> str | None:
    """Why the API refuses this request to a speech model (a 400 INVALID_ARGUMENT), None when it takes it."""
    config = body.get("generationConfig") or {}
    if _field(config, "responseModalities") != ["AUDIO"]:
        return f'{model} only generates audio: set generationConfig.responseModalities to ["AUDIO"].'
    refused = {f for f in _REFUSED_BY_3_8_SPEECH if _field(config, f) is not None} if model in _WAV_ANSWER else set()
    if refused:
        return f"{', '.join(sorted(refused))} is not supported by {model}."
    if _voice(config) not in VOICES:
        return f"Voice {_voice(config)} is not a prebuilt voice."
    parts = [p for c in body["contents"] for p in c.get("parts", [])]
    if any(set(p) - {"text", "speechMetadata", "speech_metadata"} for p in parts):
        return f"{model} takes text input only."
    text = _text(body)
    if not text.strip():
        return "The text to synthesize is empty."
    if _tokens(text) > SPEECH_INPUT_TOKENS:
        return (
            f"The input token count ({_tokens(text)}) exceeds the maximum number of tokens allowed "
            f"({SPEECH_INPUT_TOKENS})."
        )
    return None


def answer(model: str, body: dict[str, Any]) -> dict[str, Any]:
    """The API's answer to a request `refusal` takes: the words said, as one inlineData part."""
    text, tokens = _text(body), _tokens(_text(body))
    pcm = spoken_pcm(text, _voice(body.get("generationConfig") or {}))
    if model in _WAV_ANSWER:
        mime, data = "audio/wav", wav_file(pcm)
    else:
        mime, data = f"audio/L16;codec=pcm;rate={SPEECH_RATE}", pcm
    part = {"inlineData": {"mimeType": mime, "data": base64.b64encode(data).decode()}}
    audio_tokens = 25 * len(pcm) // (2 * SPEECH_RATE)  # 25 tokens a second of audio
    return {
        "candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {
            "promptTokenCount": tokens,
            "candidatesTokenCount": audio_tokens,
            "totalTokenCount": tokens + audio_tokens,
            "promptTokensDetails": [{"modality": "TEXT", "tokenCount": tokens}],
            "candidatesTokensDetails": [{"modality": "AUDIO", "tokenCount": audio_tokens}],
        },
        "modelVersion": model,
    }


def _voice(config: dict[str, Any]) -> str:
    # the API reads a field by its proto name or its JSON name (the SDK sends speechConfig's inner
    # fields in snake_case)
    voice_config = _field(_field(config, "speechConfig") or {}, "voiceConfig") or {}
    named = _field(voice_config, "voice") or _field(_field(voice_config, "prebuiltVoiceConfig") or {}, "voiceName")
    return str(named or "Kore")


def _text(body: dict[str, Any]) -> str:
    return "".join(p.get("text", "") for c in body["contents"] for p in c.get("parts", []))


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)
