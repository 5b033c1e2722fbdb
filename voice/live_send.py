"""What goes onto a Live session, in the form the model's profile asks for: microphone audio, the
seed's tail turns, and a user turn in words."""

from __future__ import annotations

from google.genai import types
from google.genai.live import AsyncSession

from parla.voice.config import MIC_RATE
from parla.voice.profiles import LiveProfile
from parla.voice.session_memory import Seed

MIC_MIME = f"audio/pcm;rate={MIC_RATE}"


async def send_audio(session: AsyncSession, block: bytes) -> None:
    await session.send_realtime_input(audio=types.Blob(data=block, mime_type=MIC_MIME))


async def send_seed(session: AsyncSession, profile: LiveProfile, seed: Seed) -> None:
    """The tail turns, with their roles, before any realtime input: left open where a completed
    turn would ask for an answer, closed where it ends the initial history."""
    history: list[types.Content | types.ContentDict] = [
        types.Content(role=t.role, parts=[types.Part(text=t.text)]) for t in seed.history
    ]
    await session.send_client_content(turns=history, turn_complete=profile.seed_turn_complete)


async def send_text(session: AsyncSession, profile: LiveProfile, text: str) -> None:
    """A user turn in words, the way the model takes one mid-session."""
    if profile.typed_turns_via == "client_content":
        turn = types.Content(role="user", parts=[types.Part(text=text)])
        await session.send_client_content(turns=turn, turn_complete=True)
    else:
        await session.send_realtime_input(text=text)
