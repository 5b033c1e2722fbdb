"""A spoken conversation in one chat, wired as the daemon runs it: the microphone and speaker, the
Live conversation, the chat's memory over the store and a compaction worker, opened together and
closed in reverse order (the conversation first, so its last turns are stored before the worker
and the devices go)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from google import genai

from daemon.chat_memory import ChatMemory
from daemon.memory_services import MemoryServices
from memory.compaction import CompactionWorker
from voice.audio import Microphone, Speaker
from voice.live import LiveConversation, SessionEvent
from voice.tool_calls import ToolHandler


@asynccontextmanager
async def spoken_conversation(
    mem: MemoryServices,
    chat_id: str,
    *,
    tools: ToolHandler | None = None,
    on_event: Callable[[SessionEvent], None] | None = None,
    client: genai.Client | None = None,
) -> AsyncIterator[LiveConversation]:
    s = mem.settings
    live_client = client or mem.client  # fails first, with how to set a key, when there is none
    worker = CompactionWorker(mem.compactor, s.compaction_concurrency, s.model_retries, s.model_retry_delay)
    async with (
        worker,
        Microphone(s.input_device, s.audio_block_ms, s.mic_queue_ms) as microphone,
        Speaker(s.output_device, s.audio_block_ms, s.playback_buffer_s) as speaker,
        LiveConversation(
            live_client,
            s,
            ChatMemory(mem.store, s, chat_id, worker),
            tools=tools,
            microphone=microphone,
            speaker=speaker,
            on_event=on_event,
        ) as conversation,
    ):
        yield conversation
