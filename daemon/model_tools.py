"""The tools the live model may call in a session, wired from the memory services: Parla's own (the
chat, memory, clock, reminder and look-up tools of tools/, declared in the order `own_tools` gives)
and, while their servers run, the user's MCP servers' tools after them. A new tool of Parla's is
made in tools/ and added to `own_tools` here.

A session's tools that change things for good (delete_chat, an MCP tool that is not read-only)
share one set of confirmations, checked against the session's `Dialogue` (tools.confirmations)."""

from __future__ import annotations

from collections.abc import Callable

from parla.kernel.local_time import LocalClock
from parla.memory.retrieval.recall import Recall
from parla.records.turn import WebSource
from parla.tools.chats import ChatSession, ChatTools
from parla.tools.clock import clock_tools
from parla.tools.confirmations import Confirmations, Dialogue
from parla.tools.look_up import GroundedSearch, look_up_tools
from parla.tools.mcp.tools import McpTools
from parla.tools.memories import MemoryTools
from parla.tools.registry import Tool, ToolRegistry
from parla.tools.reminders import ReminderTools

from .memory_services import MemoryServices


def chat_tools(mem: MemoryServices, session: ChatSession, confirmations: Confirmations | None = None) -> ChatTools:
    """The chat tools acting on `session`: the model's, and the `switch` and `new` commands'
    (daemon.commands, which confirm nothing)."""
    return ChatTools(mem.store, mem.search, mem.embedder, session, mem.settings, confirmations)


def confirmations(mem: MemoryServices, dialogue: Dialogue) -> Confirmations:
    s = mem.settings
    return Confirmations(s.delete_confirm_s, dialogue, s.confirm_answer_wait_s)


def own_tools(
    mem: MemoryServices,
    session: ChatSession,
    clock: LocalClock,
    cite: Callable[[list[WebSource]], None],
    confirming: Confirmations,
) -> list[Tool]:
    """Parla's tools acting on `session`, relative times read with `clock` in the speech's
    language (English unset); a look-up's sources go to `cite`."""
    chats = chat_tools(mem, session, confirming)
    languages = mem.dates.languages
    recall = Recall(mem.store, mem.embedder, mem.settings)
    memories = MemoryTools(mem.store, recall, mem.embedder, session, mem.settings, clock, languages)
    # "take me there" after a reminder goes through switch_chat
    reminders = ReminderTools(
        mem.store,
        session,
        chats.switch_chat,
        clock,
        languages,
        mem.settings.device_name,
        mem.settings.reminder_max_chars,
        mem.reminder_wake.set,
    )
    switch_chat, new_chat, list_chats, rename_chat, delete_chat = chats.tools()
    remember, recall_tool, forget = memories.tools()
    # the chat and memory tools in the order the model has always been given them
    own = [switch_chat, new_chat, list_chats, rename_chat, remember, recall_tool, delete_chat, forget]
    own += clock_tools(clock) + reminders.tools()
    if mem.settings.look_up:
        search = GroundedSearch(lambda: mem.client, mem.settings.look_up_model, mem.gemini_availability, clock)
        own += look_up_tools(search, mem.settings.look_up_timeout_s, cite)
    return own


def model_tools(
    mem: MemoryServices,
    session: ChatSession,
    clock: LocalClock,
    cite: Callable[[list[WebSource]], None],
    dialogue: Dialogue,
    mcp: McpTools | None = None,
) -> ToolRegistry:
    """Parla's own tools, then the MCP servers' (`mcp`) as many as `max_tool_declarations` leaves
    room for; what changes things is confirmed against `dialogue`, the session's."""
    confirming = confirmations(mem, dialogue)
    return ToolRegistry(
        own_tools(mem, session, clock, cite, confirming),
        more=(lambda: mcp.tools(confirming)) if mcp is not None else None,
        limit=mem.settings.max_tool_declarations,
        changes=mcp.changed if mcp is not None else None,
    )
