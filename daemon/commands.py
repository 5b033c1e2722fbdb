"""The control socket's commands: one handler per message of daemon/protocol.py, and `HANDLERS`,
the table the control server dispatches from. A handler is given the running daemon as the
commands see it (`Running`) and the request read through its model; what it answers is checked
against the command's answer model. A new command is its two models in daemon/protocol.py and its
handler here, nothing of the daemon's lifecycle (daemon/supervisor.py); a part of the daemon the
commands do not see yet becomes a field of `Running`, which the daemon fills in once."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from parla.memory.imports.importer import find_chats_named
from parla.tools.chats import ChatTools, NewChatArgs, SwitchArgs
from parla.tools.mcp.tools import McpTools
from parla.ui.server import Serving
from parla.voice.audio.gated_microphone import GatedMicrophone
from parla.voice.live.conversation import LiveConversation
from parla.voice.live.latency import LatencyDay

from .conversation import CurrentChat
from .daemon_status import DaemonStatus, status_answer
from .errors import CommandError
from .memory_services import MemoryServices
from .protocol import NewRequest, SayRequest, SearchRequest, SwitchRequest, TalkRequest, answer, read_request
from .typed_turns import TypedTurns


class WaitingTalks:
    """`parla talk` commands waiting to hear whether the session opened (the daemon settles them)."""

    def __init__(self) -> None:
        self._waiting: list[asyncio.Future[dict[str, Any]]] = []

    async def wait(self, seconds: float) -> dict[str, Any] | None:
        """What `settle` says within `seconds`; None past them."""
        opened: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting.append(opened)
        try:
            async with asyncio.timeout(seconds):
                return await asyncio.shield(opened)
        except TimeoutError:
            return None
        finally:
            self._waiting.remove(opened)

    def settle(self, outcome: dict[str, Any]) -> None:
        for opened in self._waiting:
            if not opened.done():
                opened.set_result(outcome)


@dataclass(frozen=True)
class Running:
    """The running daemon as its commands see it, once its devices are open: its parts, and for
    what comes and goes while it runs (the session, the inspector, the reminder scheduler) a
    function that says what is there now."""

    mem: MemoryServices
    status: DaemonStatus
    gate: GatedMicrophone
    current: CurrentChat
    chats: ChatTools
    typed: TypedTurns
    talks: WaitingTalks
    activate: asyncio.Event  # set: a session opens
    latency_day: LatencyDay
    conversation: Callable[[], LiveConversation | None]
    mcp: McpTools
    inspector: Callable[[], Serving | str]  # the inspector serving, or why it is not
    reminders_said: Callable[[], int]
    stop: Callable[[], None]


async def status(running: Running, request: object) -> dict[str, Any]:
    return await status_answer(
        running.mem,
        running.status,
        running.gate,
        running.current.chat_id,
        running.current.why,
        running.conversation(),
        running.latency_day,
        running.reminders_said(),
        running.mcp,
    )


# switch and new answer as the model's tools do (tools.chats): one decision, two front ends


async def switch(running: Running, request: SwitchRequest) -> dict[str, Any]:
    """A chat id, the start of one, an exact title or an imported chat's id goes to that chat
    (the ambiguous answer tells the user to give the id); anything else is searched for by
    meaning."""
    ref = request.query
    named = await find_chats_named(running.mem.store, ref)
    if len(named) == 1:
        return await running.chats.switch_chat(SwitchArgs(chat_id=named[0].id))
    return await running.chats.switch_chat(SwitchArgs(query=ref))


async def new(running: Running, request: NewRequest) -> dict[str, Any]:
    return await running.chats.new_chat(NewChatArgs(topic=request.title))


async def talk(running: Running, request: TalkRequest) -> dict[str, Any]:
    """With `wait` (seconds), answers once the session is open (`listening`) or could not
    open (`failed`, with the reason), or past the wait `activating` with the last error."""
    if running.conversation() is not None:
        return {"result": "already_active"}
    running.activate.set()
    if not request.wait:
        return {"result": "activating"}
    opened = await running.talks.wait(request.wait)
    if opened is None:
        return {"result": "activating", "last_error": running.status.last_error}
    return opened


async def say(running: Running, request: SayRequest) -> dict[str, Any]:
    return await running.typed.say(request)


async def search(running: Running, request: SearchRequest) -> dict[str, Any]:
    """`parla search` asked here: the embedder and the index are warm in the daemon."""
    result = await running.mem.search.search(request.query, limit=request.limit)
    return {"search": result.model_dump(mode="json")}


async def reminders(running: Running, request: object) -> dict[str, Any]:
    """Reminders were set or cancelled elsewhere on this machine (`parla reminders`): read them again."""
    running.mem.reminder_wake.set()
    return {"result": "ok"}


async def summaries(running: Running, request: object) -> dict[str, Any]:
    """Chats were queued for their summaries elsewhere on this machine (`parla import`): look now."""
    running.mem.summary_worker.wake()
    return {"result": "ok"}


async def ui(running: Running, request: object) -> dict[str, Any]:
    inspector = running.inspector()
    if isinstance(inspector, str):
        raise CommandError(inspector)
    return {"url": inspector.url, "address": inspector.address}


async def mute(running: Running, request: object) -> dict[str, Any]:
    running.gate.mute(True)
    return {"result": "muted"}


async def unmute(running: Running, request: object) -> dict[str, Any]:
    running.gate.mute(False)
    return {"result": "unmuted"}


async def stop(running: Running, request: object) -> dict[str, Any]:
    running.stop()
    return {"result": "stopping"}


Handler = Callable[[Running, Any], Awaitable[dict[str, Any]]]

# A request names one of these and nothing else (each has its models in daemon/protocol.py).
HANDLERS: dict[str, Handler] = {
    "status": status,
    "switch": switch,
    "new": new,
    "talk": talk,
    "say": say,
    "search": search,
    "reminders": reminders,
    "summaries": summaries,
    "ui": ui,
    "mute": mute,
    "unmute": unmute,
    "stop": stop,
}


async def dispatch(running: Running | None, cmd: str, request: dict[str, Any]) -> dict[str, Any]:
    """The answer to one request: read through its command's model, handled, and checked against
    the answer's model. `running` is None while the daemon starts."""
    handler = HANDLERS.get(cmd)
    if handler is None:
        known = ", ".join(sorted(HANDLERS))
        raise CommandError(f"unknown command {cmd!r}; the daemon knows {known}")
    if running is None:
        raise CommandError("the daemon is still starting; try again in a moment")
    try:
        typed = read_request(cmd, request)
    except ValueError as e:
        raise CommandError(str(e)) from None
    return answer(cmd, await handler(running, typed))
