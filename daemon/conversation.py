"""A spoken conversation, wired as the daemon runs it: the microphone and speaker, the Live
conversation with the chat tools, the current chat's memory over the store and a compaction
worker, opened together and closed in reverse order (the conversation first, so its last turns are
stored before the worker and the devices go)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from google import genai

from daemon.chat_memory import ChatMemory
from daemon.memory_services import MemoryServices
from memory.compaction import CompactionWorker
from tools.chats import ChatTools
from tools.registry import ToolRegistry
from voice.audio import Microphone, Speaker
from voice.live import LiveConversation, SessionEvent


@dataclass
class CurrentChat:
    """Which chat the conversation is in, and moving it (tools.chats.ChatSession)."""

    mem: MemoryServices
    worker: CompactionWorker
    chat_id: str
    conversation: LiveConversation | None = field(default=None, repr=False)

    def memory(self, chat_id: str) -> ChatMemory:
        return ChatMemory(self.mem.store, self.mem.settings, chat_id, self.worker)

    def switch(self, chat_id: str) -> None:
        assert self.conversation is not None
        left, self.chat_id = self.chat_id, chat_id
        self.conversation.switch_to(self.memory(chat_id))
        self.worker.schedule(left)  # the chat left behind is summarised in the background


@asynccontextmanager
async def spoken_conversation(
    mem: MemoryServices,
    chat_id: str,
    *,
    on_event: Callable[[SessionEvent], None] | None = None,
    client: genai.Client | None = None,
) -> AsyncIterator[LiveConversation]:
    s = mem.settings
    live_client = client or mem.client  # fails first, with how to set a key, when there is none
    worker = CompactionWorker(mem.compactor, s.compaction_concurrency, s.model_retries, s.model_retry_delay)
    current = CurrentChat(mem, worker, chat_id)
    tools = ToolRegistry(ChatTools(mem.store, mem.search, mem.embedder, current, mem.settings.forget_margin).tools())
    async with (
        worker,
        Microphone(s.input_device, s.audio_block_ms, s.mic_queue_ms) as microphone,
        Speaker(s.output_device, s.audio_block_ms, s.playback_buffer_s) as speaker,
        LiveConversation(
            live_client,
            s,
            current.memory(chat_id),
            tools=tools,
            microphone=microphone,
            speaker=speaker,
            on_event=on_event,
        ) as conversation,
    ):
        current.conversation = conversation
        yield conversation
