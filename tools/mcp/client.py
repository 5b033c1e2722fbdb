"""One of the user's MCP servers, kept connected through the official `mcp` SDK: started (a stdio
command, or a streamable HTTP address), its tools listed and filtered by the allow-list, called with
a timeout; when it fails to start or dies (a call finds the connection gone, or a ping goes
unanswered) its tools are withdrawn and it is restarted after a backoff that doubles up to a cap.

`McpServer` is an async context manager that owns the one task keeping the connection. The SDK runs
its transport in anyio task groups, which must be entered and left in one task: that task.
Nothing logged names the server's environment (its secrets): only its name and the failure's type.

Its `state`: `starting` during its first start (until it runs, fails, or its start timeout
passes), `running`, or `restarting` (it failed or died, and is started again after a backoff).
`on_change` is told each time the state or the tools change.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from dataclasses import dataclass
from typing import Any, Literal, Self

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp import types as mcp_types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from parla.kernel.tasks import cancel_and_wait

from ..errors import ToolError
from .config import McpServerConfig

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class McpTool:
    name: str  # the server's own name for it
    description: str
    parameters: dict[str, Any]
    read_only: bool  # readOnlyHint and not destructiveHint: it runs without the user's yes


def _tool(tool: mcp_types.Tool) -> McpTool:
    hints = tool.annotations
    read_only = bool(hints and hints.read_only_hint and not hints.destructive_hint)
    return McpTool(tool.name, tool.description or tool.title or tool.name, dict(tool.input_schema), read_only)


def _reason(error: BaseException) -> str:
    """The failure's type, from inside the SDK's task groups (its message may quote the environment)."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return type(error).__name__


State = Literal["starting", "running", "restarting"]


class McpServer:
    _STOP_S = 10.0  # the SDK's own stop takes at most its grace and kill waits (about 4 s)

    def __init__(
        self, config: McpServerConfig, ping_s: float = 30.0, on_change: Callable[[], None] = lambda: None
    ) -> None:
        self.config = config
        self.ping_s = ping_s
        self.on_change = on_change
        self.tools: list[McpTool] = []  # empty while the server is not running
        self.starts = 0
        self.last_error: str | None = None
        self.began: float | None = None  # loop time its first start began
        self._session: ClientSession | None = None
        self._dead = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._scope = anyio.CancelScope()

    async def __aenter__(self) -> Self:
        self.began = asyncio.get_running_loop().time()
        self._task = asyncio.create_task(self._keep(), name=f"mcp:{self.config.name}")
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._task is None:
            return
        # Stopped through its anyio scope, not task.cancel(): the SDK's stdio transport stops the
        # server (stdin closed, then a kill) in a shielded scope that a native cancellation cuts
        # short, leaving its shielded read of the server's output to wait until the server ends
        # by itself (a server stuck starting held a stop for its whole start).
        self._scope.cancel()
        try:
            async with asyncio.timeout(self._STOP_S):
                await asyncio.shield(self._task)
        except TimeoutError:
            await cancel_and_wait(self._task)

    @property
    def running(self) -> bool:
        return self._session is not None

    @property
    def state(self) -> State:
        if self._session is not None:
            return "running"
        return "starting" if self.starts == 0 and self.last_error is None else "restarting"

    @property
    def start_deadline(self) -> float:
        """The loop time its first start times out at."""
        assert self.began is not None, "use McpServer inside `async with`"
        return self.began + self.config.start_timeout_s

    def _transport(self) -> AbstractAsyncContextManager[Any]:
        c = self.config
        if c.url is not None:
            return streamable_http_client(c.url)
        assert c.command is not None
        env = {k: v.get_secret_value() for k, v in c.env.items()}
        return stdio_client(StdioServerParameters(command=c.command, args=c.args, env=env))

    async def _keep(self) -> None:
        with self._scope:
            await self._keep_connected()

    async def _keep_connected(self) -> None:
        delay = self.config.restart_delay_s
        while True:
            try:
                async with AsyncExitStack() as stack:
                    read, write = await stack.enter_async_context(self._transport())
                    session = await stack.enter_async_context(ClientSession(read, write))
                    # a start is a process starting (an interpreter, its imports): longer than a call
                    async with asyncio.timeout(self.config.start_timeout_s):
                        await session.initialize()
                        listed = await session.list_tools()
                    allow = self.config.allow
                    self.tools = [_tool(t) for t in listed.tools if allow is None or t.name in allow]
                    self._session, self.last_error = session, None
                    self.starts += 1
                    self.on_change()
                    delay = self.config.restart_delay_s
                    log.info(
                        "MCP server %s started: %d tools",
                        self.config.name,
                        len(self.tools),
                        extra={"event": "mcp_started", "server": self.config.name},
                    )
                    await self._watch(session)
            except asyncio.CancelledError:
                raise
            except Exception as e:  # noqa: BLE001 - any failure of the server is survived by restarting it
                self.last_error = _reason(e)
            finally:
                self._session, self.tools = None, []
            self.on_change()
            log.warning(
                "MCP server %s is down (%s); restart in %.1fs",
                self.config.name,
                self.last_error or "ended",
                delay,
                extra={"event": "mcp_down", "server": self.config.name},
            )
            await asyncio.sleep(delay)
            delay = min(delay * 2, self.config.restart_max_delay_s)

    async def _watch(self, session: ClientSession) -> None:
        """Returns when the server is found dead: by a call, or by a ping it does not answer."""
        self._dead.clear()
        while True:
            try:
                async with asyncio.timeout(self.ping_s):
                    await self._dead.wait()
                    return
            except TimeoutError:
                pass
            async with asyncio.timeout(self.config.call_timeout_s):
                await session.send_ping()

    async def call(self, name: str, args: dict[str, Any]) -> mcp_types.CallToolResult:
        session = self._session
        if session is None:
            raise ToolError(f"the {self.config.name} server is not running now; it is being restarted")
        try:
            return await session.call_tool(name, args)
        except MCPError as e:
            if e.code != mcp_types.CONNECTION_CLOSED:  # the server answered: it refused this call
                raise ToolError(f"the {self.config.name} server refused {name}: {e.message[:200]}") from None
            # it died: its tools are withdrawn at once, and it is restarted
            self._session, self.tools = None, []
            self._dead.set()
            self.on_change()
            raise ToolError(f"the {self.config.name} server stopped; it is being restarted") from None
