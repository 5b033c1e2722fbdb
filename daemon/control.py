"""The daemon's control socket: a Unix socket in the user runtime dir, mode 0600, one JSON object
per line each way. A request is `{"cmd": "status"}` or `{"cmd": "say", "text": "..."}`; the answer
is `{"ok": true, ...}` or `{"ok": false, "error": "what is wrong and what to do"}`. A malformed
line (bad JSON, nested too deeply, too long) gets an error answer; clients are served concurrently,
up to MAX_CLIENTS at once. A client has `request_timeout_s` to send each whole request line, or the
connection closes with an error answer. When every place is taken, the client that has waited
longest (over EVICT_AFTER_S) for its request makes room for the new one, so half-open clients
cannot lock the socket out; only when all of them are being answered is the new one told
`{"ok": false, "busy": true, ...}` and may retry, except for `stop`, which is always served.

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
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

from parla.kernel.errors import ParlaError
from parla.kernel.tasks import cancel_and_wait

from .errors import (
    CommandError,
    ControlError,
    DaemonAlreadyRunning,
    DaemonBusy,
    DaemonNotRunning,
    UnsafeSocketFolder,
)

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
# How long a client may take to send a whole request line (the default of `control_request_timeout_s`).
REQUEST_TIMEOUT_S = 10.0
# A client waiting this long for its own request may lose its place to a new client (a client
# sends its request as soon as it connects; one whose request is on its way keeps its place).
EVICT_AFTER_S = 0.25
# Served even when every place is taken by clients being answered: the user can always stop the daemon.
ALWAYS_SERVED = "stop"


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
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(mode):  # a mistyped setting must not cost the user a file
        raise ControlError(
            f"{path} is there and is not a socket, so it cannot be the control socket (it is left as it is); "
            "set PARLA_CONTROL_SOCKET to a path where no file is"
        )
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(str(path))
    except OSError:
        path.unlink()  # left behind by a daemon that did not exit cleanly
    else:
        raise DaemonAlreadyRunning(path)
    finally:
        probe.close()


@dataclass(eq=False)
class _Client:
    writer: asyncio.StreamWriter
    waiting_since: float | None  # when it began waiting for a request; None while its request is answered
    evicted: bool = False


class ControlServer:
    """Serves `handler(cmd, request)` on the socket while the context is open."""

    def __init__(self, path: Path, handler: Handler, request_timeout_s: float = REQUEST_TIMEOUT_S) -> None:
        self.path = path
        self.handler = handler
        self.request_timeout_s = request_timeout_s
        self._server: asyncio.AbstractServer | None = None
        self._clients: dict[asyncio.Task[None], _Client] = {}  # the places taken
        self._tasks: set[asyncio.Task[None]] = set()  # every connection's handler, evicted ones included
        self._identity: tuple[int, int] | None = None  # (device, inode) of the socket made

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
        st = self.path.lstat()
        self._identity = (st.st_dev, st.st_ino)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.close()
        # Closing a client's connection ends its handler (its read sees the end); a handler still
        # busy after a second is cancelled.
        for client in self._clients.values():
            client.writer.close()
        if self._tasks:
            _, late = await asyncio.wait(list(self._tasks), timeout=1.0)
            await cancel_and_wait(*late)
        if self._server is not None:
            with suppress(Exception):
                await self._server.wait_closed()
        with suppress(FileNotFoundError):
            st = self.path.lstat()
            if (st.st_dev, st.st_ino) == self._identity:  # whatever replaced our socket is not ours to remove
                self.path.unlink()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        loop = asyncio.get_running_loop()
        try:
            if len(self._clients) >= MAX_CLIENTS and not self._evict_longest_waiting():
                await self._refuse_busy(reader, writer)
                return
            client = self._clients[task] = _Client(writer, loop.time())
            while True:
                try:
                    async with asyncio.timeout(self.request_timeout_s):
                        line = await reader.readline()
                except ValueError:  # longer than MAX_LINE
                    await _write(writer, {"ok": False, "error": f"request longer than {MAX_LINE} bytes"})
                    await _drop_the_rest(reader)
                    break
                except TimeoutError:
                    error = f"no whole request line within {self.request_timeout_s:g}s; closing"
                    await _write(writer, {"ok": False, "error": error})
                    break
                if not line or client.evicted:
                    break
                if line.strip():
                    client.waiting_since = None
                    await _write(writer, await self._answer(line))
                    client.waiting_since = loop.time()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        except Exception:  # one client's failure never reaches the server or the other clients
            log.exception("control connection failed")
        finally:
            self._clients.pop(task, None)
            self._tasks.discard(task)
            writer.close()
            with suppress(Exception):
                await writer.wait_closed()

    def _evict_longest_waiting(self) -> bool:
        """Make room by closing the connection that has waited longest for its request, if that is
        longer than EVICT_AFTER_S: one still waiting then is slow, idle or hostile."""
        before = asyncio.get_running_loop().time() - EVICT_AFTER_S
        waiting = [
            (c.waiting_since, t)
            for t, c in self._clients.items()
            if c.waiting_since is not None and c.waiting_since <= before
        ]
        if not waiting:
            return False
        task = min(waiting, key=lambda w: w[0])[1]
        client = self._clients.pop(task)
        client.evicted = True
        client.writer.transport.abort()  # its handler sees the end of the connection and finishes
        return True

    async def _refuse_busy(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Every place is taken by a client being answered: the request is read (closing with it
        unread would reset the connection, and the client would see an error instead of the
        answer) and answered busy, unless it is `stop`."""
        line = b""
        with suppress(TimeoutError, ValueError):
            async with asyncio.timeout(LINGER_S):
                line = await reader.readline()
        request = _parse(line)
        if isinstance(request, dict) and request["cmd"] == ALWAYS_SERVED:
            await _write(writer, await self._answer(line))
            return
        await _write(
            writer, {"ok": False, "busy": True, "error": f"the daemon is serving {MAX_CLIENTS} clients; retry"}
        )

    async def _answer(self, line: bytes) -> dict[str, Any]:
        request = _parse(line)
        if isinstance(request, str):
            return {"ok": False, "error": request}
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


def _parse(line: bytes) -> dict[str, Any] | str:
    """The request, or what is wrong with it."""
    try:
        request = json.loads(line)
        if not isinstance(request, dict) or not isinstance(request.get("cmd"), str):
            raise TypeError("not an object with a string `cmd`")
    except RecursionError:
        return "malformed request (nested too deeply): send one flat JSON object per line"
    except (ValueError, TypeError) as e:
        return f'malformed request ({e}): send one JSON object per line, like {{"cmd": "status"}}'
    return request


async def _drop_the_rest(reader: asyncio.StreamReader) -> None:
    """Read and drop what an over-long request still sends: closing with it unread would reset the
    connection before the client reads the answer. The loop keeps its own deadline: a client that
    never stops sending must not hold the connection past it."""
    loop = asyncio.get_running_loop()
    until = loop.time() + LINGER_S
    with suppress(TimeoutError):
        while loop.time() < until:
            async with asyncio.timeout_at(until):
                if not await reader.read(MAX_LINE):
                    return


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
        # not asyncio.wait_for: on Python 3.11 it returns the answer when it arrives as the caller's
        # own timeout fires, and that cancellation is lost (a loop under one timeout then never ends)
        async with asyncio.timeout(timeout):
            line = await reader.readline()
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
