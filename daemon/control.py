"""The daemon's control socket: a Unix socket in the user runtime dir, mode 0600, one JSON object
per line each way. A request is `{"cmd": "status"}` or `{"cmd": "say", "text": "..."}`; the answer
is `{"ok": true, ...}` or `{"ok": false, "error": "what is wrong and what to do"}`. A malformed
line (bad JSON, nested too deeply, too long) gets an error answer; clients are served concurrently,
up to MAX_CLIENTS at once: one more is answered `{"ok": false, "busy": true, ...}` and may retry.

The socket's folder must be ours and writable by nobody else, or another local user could put
their own socket in its place and read what is sent to the daemon: both ends refuse such a folder."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import stat
from collections.abc import Awaitable, Callable
from contextlib import suppress
from pathlib import Path
from typing import Any, Self

from parla.daemon.errors import (
    CommandError,
    ControlError,
    DaemonAlreadyRunning,
    DaemonBusy,
    DaemonNotRunning,
    UnsafeSocketFolder,
)
from parla.memory.errors import ParlaError
from parla.memory.tasks import cancel_and_wait

log = logging.getLogger(__name__)

Handler = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]

# A line longer than this is refused (a `say` text fits many times over).
MAX_LINE = 64 * 1024
# Connections waiting to be accepted while the loop is busy; past it a connect fails (EAGAIN).
BACKLOG = 1024
# Clients served at once; one more is told to retry (each costs a task and a descriptor).
MAX_CLIENTS = 128
# How long a refused client (busy, request too long) may go on sending before the connection closes.
LINGER_S = 1.0
# How long send_command keeps retrying a daemon too busy to take the connection.
BUSY_RETRY_S = 3.0


def check_folder(folder: Path) -> None:
    """Refuse a socket folder another user owns or can write to."""
    st = folder.stat()
    fix = f"set PARLA_CONTROL_SOCKET to a path in a folder of yours that only you can write (chmod 700 {folder})"
    if st.st_uid != os.getuid():
        raise UnsafeSocketFolder(
            f"the control socket's folder {folder} belongs to another user (uid {st.st_uid}); {fix}"
        )
    if st.st_mode & 0o022:
        raise UnsafeSocketFolder(
            f"the control socket's folder {folder} is writable by other users (mode {stat.S_IMODE(st.st_mode):o}), "
            f"who could replace the socket; {fix}"
        )


def unusable_path(path: Path, error: OSError) -> ControlError:
    """The system refused the socket's path (under a file, too long, not ours to create): a setting
    the user changes, not a fault of the daemon."""
    return ControlError(
        f"cannot use {path} as the control socket ({error.strerror or error}); "
        "set PARLA_CONTROL_SOCKET to a shorter path in a folder of yours"
    )


def _prepare(path: Path) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as e:
        raise unusable_path(path, e) from e
    check_folder(path.parent)
    if path.exists() or path.is_symlink():
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(str(path))
        except OSError:
            path.unlink()  # left behind by a daemon that did not exit cleanly
        else:
            raise DaemonAlreadyRunning(path)
        finally:
            probe.close()


class ControlServer:
    """Serves `handler(cmd, request)` on the socket while the context is open."""

    def __init__(self, path: Path, handler: Handler) -> None:
        self.path = path
        self.handler = handler
        self._server: asyncio.AbstractServer | None = None
        self._clients: dict[asyncio.Task[None], asyncio.StreamWriter] = {}

    async def __aenter__(self) -> Self:
        _prepare(self.path)
        old = os.umask(0o177)  # the socket is born 0600: no window where others could connect
        try:
            self._server = await asyncio.start_unix_server(
                self._client, path=str(self.path), limit=MAX_LINE, backlog=BACKLOG
            )
        except OSError as e:
            raise unusable_path(self.path, e) from e
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
            await cancel_and_wait(*late)
        if self._server is not None:
            with suppress(Exception):
                await self._server.wait_closed()
        with suppress(FileNotFoundError):
            self.path.unlink()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        try:
            if len(self._clients) >= MAX_CLIENTS:
                # The request is read before the answer: closing with it unread would reset the
                # connection, and the client would see an error instead of the answer.
                with suppress(TimeoutError, ValueError):
                    await asyncio.wait_for(reader.readline(), LINGER_S)
                await _write(
                    writer, {"ok": False, "busy": True, "error": f"the daemon is serving {MAX_CLIENTS} clients; retry"}
                )
                return
            self._clients[task] = writer
            while True:
                try:
                    line = await reader.readline()
                except ValueError:  # longer than MAX_LINE
                    await _write(writer, {"ok": False, "error": f"request longer than {MAX_LINE} bytes"})
                    # the rest of it is read and dropped: closing with it unread would reset the
                    # connection before the client reads the answer
                    with suppress(TimeoutError):
                        async with asyncio.timeout(LINGER_S):
                            while await reader.read(MAX_LINE):
                                pass
                    break
                if not line:
                    break
                if line.strip():
                    await _write(writer, await self._answer(line))
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        except Exception:  # one client's failure never reaches the server or the other clients
            log.exception("control connection failed")
        finally:
            self._clients.pop(task, None)
            writer.close()
            with suppress(Exception):
                await writer.wait_closed()

    async def _answer(self, line: bytes) -> dict[str, Any]:
        try:
            request = json.loads(line)
            if not isinstance(request, dict) or not isinstance(request.get("cmd"), str):
                raise TypeError("not an object with a string `cmd`")
        except RecursionError:
            return {"ok": False, "error": "malformed request (nested too deeply): send one flat JSON object per line"}
        except (ValueError, TypeError) as e:
            return {
                "ok": False,
                "error": f'malformed request ({e}): send one JSON object per line, like {{"cmd": "status"}}',
            }
        try:
            return {"ok": True, **await self.handler(request["cmd"], request)}
        except CommandError as e:
            return {"ok": False, "error": str(e)}
        except ParlaError as e:  # the user's to act on (a store away, a re-embed running): one line
            log.warning("control command %r failed: %s", request["cmd"], e)
            return {"ok": False, "error": str(e)}
        except Exception as e:
            log.exception("control command %r failed", request["cmd"])
            return {"ok": False, "error": f"{request['cmd']} failed: {type(e).__name__}: {e}"}


async def _write(writer: asyncio.StreamWriter, answer: dict[str, Any]) -> None:
    writer.write(json.dumps(answer, ensure_ascii=False).encode() + b"\n")
    await writer.drain()


async def send_command(path: Path, cmd: str, timeout: float = 30.0, **args: Any) -> dict[str, Any]:
    """Send one command to the daemon; the answer without `ok`, or CommandError with its message.
    A daemon too busy to take the connection did nothing, so the command is sent again for a while
    (BUSY_RETRY_S) before DaemonBusy."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + BUSY_RETRY_S
    delay = 0.02
    while True:
        try:
            return await _send_once(path, cmd, timeout, args)
        except DaemonBusy:
            if loop.time() + delay > deadline:
                raise
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.5)


def _connect(path: Path) -> socket.socket:
    """A connected socket; a Unix connect completes at once or fails, so a full backlog (EAGAIN) is
    told apart from a connection asyncio would report as made and then lose."""
    if path.parent.exists():
        check_folder(path.parent)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.setblocking(False)
    try:
        sock.connect(str(path))
    except BaseException as e:
        sock.close()
        if isinstance(e, FileNotFoundError):
            raise DaemonNotRunning(path) from None
        if isinstance(e, ConnectionRefusedError):
            raise DaemonNotRunning(path, "a stale socket is left") from None
        if isinstance(e, BlockingIOError):
            raise DaemonBusy("the daemon has too many connections waiting; retry in a moment") from None
        if isinstance(e, OSError):
            raise unusable_path(path, e) from e
        raise
    return sock


async def _send_once(path: Path, cmd: str, timeout: float, args: dict[str, Any]) -> dict[str, Any]:
    reader, writer = await asyncio.open_unix_connection(sock=_connect(path), limit=MAX_LINE)
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
        error = answer.get("error", "the daemon refused the command")
        raise DaemonBusy(error) if answer.get("busy") else CommandError(error)
    return answer
