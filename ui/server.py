"""Serving the inspector on 127.0.0.1 with uvicorn, as a task its owner (the daemon, or `parla ui`)
starts and stops: the port is bound before anything else so a taken port fails at once, and
uvicorn neither installs signal handlers (the owner has its own) nor writes an access log (the
token is in every address)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass

import uvicorn

from parla.kernel.errors import ParlaError
from parla.kernel.tasks import cancel_and_wait

from .app import Inspector
from .connections import guarded_protocol
from .limits import MAX_CONNECTIONS, REQUEST_TIMEOUT_S

HOST = "127.0.0.1"
# Open pages (their event streams end at once on close) get this long to finish their requests.
_GRACE_S = 2
_START_TIMEOUT_S = 10.0


class InspectorUnavailable(ParlaError):
    """The inspector could not be served (its port is taken)."""


@dataclass(frozen=True)
class Serving:
    address: str  # http://127.0.0.1:PORT, safe to print anywhere
    url: str  # the address with the token: only for its user

    @property
    def port(self) -> int:
        return int(self.address.rsplit(":", 1)[1])


class _Server(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        # the owner handles SIGINT/SIGTERM and stops the server itself
        yield


def _bind(port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((HOST, port))
    except OSError as e:
        sock.close()
        raise InspectorUnavailable(
            f"cannot serve the memory inspector on {HOST}:{port} ({e.strerror}): another program (another "
            "`parla ui`?) uses the port; stop it or set PARLA_UI_PORT to a free port (0: any)"
        ) from e
    return sock


@contextlib.asynccontextmanager
async def serve_inspector(
    inspector: Inspector,
    port: int,
    max_connections: int = MAX_CONNECTIONS,
    request_timeout_s: float = REQUEST_TIMEOUT_S,
) -> AsyncIterator[Serving]:
    """See ui/connections.py for the bounds."""
    sock = _bind(port)
    # uvicorn writes its access log (every address, token included) whenever that logger has a
    # handler, and with `log_config=None` it inherits the root's (the daemon's log, a test's
    # capture): `access_log=False` alone does not stop it
    access = logging.getLogger("uvicorn.access")
    access.propagate = False
    access.disabled = True
    config = uvicorn.Config(
        inspector.app(),
        http=guarded_protocol(max_connections, request_timeout_s),
        # the connections waiting to be accepted, and accepted in one turn of the loop: a flood
        # closed one by one never holds more descriptors at once than a few times this
        backlog=max_connections,
        lifespan="off",
        ws="none",
        access_log=False,
        log_config=None,
        timeout_graceful_shutdown=_GRACE_S,
    )
    server = _Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]), name="inspector")
    try:
        loop = asyncio.get_running_loop()
        until = loop.time() + _START_TIMEOUT_S
        async with asyncio.timeout_at(until):
            while not server.started:
                if task.done():
                    task.result()
                    raise InspectorUnavailable("the memory inspector stopped while starting")
                if loop.time() > until:  # its own deadline too, should the timeout's cancellation be lost
                    raise TimeoutError
                await asyncio.sleep(0.01)
        address = f"http://{HOST}:{sock.getsockname()[1]}"
        yield Serving(address, f"{address}/{inspector.token}/")
    finally:
        if inspector.live is not None:
            inspector.live.close()
        server.should_exit = True
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            await cancel_and_wait(task)
            raise
        finally:
            sock.close()
