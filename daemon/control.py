"""The daemon's control socket: a Unix socket in the user runtime dir, mode 0600, one JSON object
per line each way. A request is `{"cmd": "status"}` or `{"cmd": "say", "text": "..."}`; the answer
is `{"ok": true, ...}` or `{"ok": false, "error": "what is wrong and what to do"}`. A malformed
line gets an error answer and the connection stays open; clients are served concurrently."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
from collections.abc import Awaitable, Callable
from contextlib import suppress
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

Handler = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]

# A line longer than this is refused (a `say` text fits many times over).
MAX_LINE = 64 * 1024


class DaemonNotRunning(RuntimeError):
    def __init__(self, path: Path, why: str = "") -> None:
        super().__init__(
            f"the Parla daemon is not running{f' ({why})' if why else ''}: start it with `parla run`, "
            f"or `parla service install` to run it in the background (socket {path})"
        )


class CommandError(RuntimeError):
    """The daemon refused a command; the message is the daemon's."""


def _prepare(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    if path.parent.stat().st_uid != os.getuid():
        raise OSError(f"{path.parent} belongs to another user; set PARLA_CONTROL_SOCKET to a folder of yours")
    if path.exists() or path.is_symlink():
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(str(path))
        except OSError:
            path.unlink()  # left behind by a daemon that did not exit cleanly
        else:
            raise OSError(f"a Parla daemon is already running (socket {path}); `parla stop` ends it")
        finally:
            probe.close()


class ControlServer:
    """Serves `handler(cmd, request)` on the socket while the context is open."""

    def __init__(self, path: Path, handler: Handler) -> None:
        self.path = path
        self.handler = handler
        self._server: asyncio.AbstractServer | None = None
        self._clients: dict[asyncio.Task[None], asyncio.StreamWriter] = {}

    async def __aenter__(self) -> ControlServer:
        _prepare(self.path)
        old = os.umask(0o177)  # the socket is born 0600: no window where others could connect
        try:
            self._server = await asyncio.start_unix_server(self._client, path=str(self.path), limit=MAX_LINE)
        finally:
            os.umask(old)
        os.chmod(self.path, 0o600)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.close()
        # Closing a client's connection ends its handler (its read sees the end); a handler still
        # busy after a second is cancelled.
        for writer in self._clients.values():
            writer.close()
        if self._clients:
            _, late = await asyncio.wait(list(self._clients), timeout=1.0)
            for task in late:
                task.cancel()
        if self._server is not None:
            with suppress(Exception):
                await self._server.wait_closed()
        with suppress(FileNotFoundError):
            self.path.unlink()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._clients[task] = writer
        try:
            while True:
                try:
                    line = await reader.readline()
                except ValueError:  # longer than MAX_LINE
                    await _write(writer, {"ok": False, "error": f"request longer than {MAX_LINE} bytes"})
                    break
                if not line:
                    break
                if line.strip():
                    await _write(writer, await self._answer(line))
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self._clients.pop(task, None)
            writer.close()
            with suppress(Exception):
                await writer.wait_closed()

    async def _answer(self, line: bytes) -> dict[str, Any]:
        try:
            request = json.loads(line)
            if not isinstance(request, dict) or not isinstance(request.get("cmd"), str):
                raise ValueError("not an object with a string `cmd`")
        except ValueError as e:
            return {
                "ok": False,
                "error": f'malformed request ({e}): send one JSON object per line, like {{"cmd": "status"}}',
            }
        try:
            return {"ok": True, **await self.handler(request["cmd"], request)}
        except CommandError as e:
            return {"ok": False, "error": str(e)}
        except Exception as e:
            log.exception("control command %r failed", request["cmd"])
            return {"ok": False, "error": f"{request['cmd']} failed: {type(e).__name__}: {e}"}


async def _write(writer: asyncio.StreamWriter, answer: dict[str, Any]) -> None:
    writer.write(json.dumps(answer, ensure_ascii=False).encode() + b"\n")
    await writer.drain()


async def send_command(path: Path, cmd: str, timeout: float = 30.0, **args: Any) -> dict[str, Any]:
    """Send one command to the daemon; the answer without `ok`, or CommandError with its message."""
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_unix_connection(str(path), limit=MAX_LINE), timeout)
    except FileNotFoundError:
        raise DaemonNotRunning(path) from None
    except ConnectionRefusedError:
        raise DaemonNotRunning(path, "a stale socket is left") from None
    try:
        writer.write(json.dumps({"cmd": cmd, **args}).encode() + b"\n")
        await writer.drain()
        line = await asyncio.wait_for(reader.readline(), timeout)
    finally:
        writer.close()
        with suppress(Exception):
            await writer.wait_closed()
    if not line:
        raise DaemonNotRunning(path, "it closed the connection")
    answer = json.loads(line)
    if not answer.pop("ok", False):
        raise CommandError(answer.get("error", "the daemon refused the command"))
    return answer
