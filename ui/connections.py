"""The inspector's connections, bounded before any token check: anyone on the machine can connect
to 127.0.0.1, and uvicorn alone keeps a connection that never sends a request forever (its
keep-alive timer starts only after a response), until the daemon runs out of file descriptors.

- A connection has `request_timeout_s` to send a whole request (head and body), from when it
  opens and again after each response; one that has not is closed (idle and slow clients alike).
  An answer under way (the live page's event stream among them) is not cut.
- At most `max_connections` are open: one more makes room by closing the connection that has
  waited longest for its next request (itself when all the others are being answered), so the
  descriptors the inspector holds stay bounded whatever others open (with the listening socket's
  backlog, which also bounds the connections accepted in one turn of the loop, set to the same
  number by ui/server.py)."""

from __future__ import annotations

import array
import asyncio
import fcntl
import termios

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from .limits import MAX_CONNECTIONS, REQUEST_TIMEOUT_S


class _GuardedH11(H11Protocol):
    max_connections = MAX_CONNECTIONS
    request_timeout_s = REQUEST_TIMEOUT_S

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._deadline: asyncio.TimerHandle | None = None
        self._arm()
        self._make_room()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def handle_events(self) -> None:
        super().handle_events()
        if not self._waiting():
            self._disarm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()

    def _waiting(self) -> bool:
        """No whole request has come in since the last response (or since the connection opened)."""
        return self.conn.their_state in (h11.IDLE, h11.SEND_BODY)

    def _arm(self) -> None:
        self._disarm()
        self._waiting_since = self.loop.time()
        self._deadline = self.loop.call_later(self.request_timeout_s, self._expire)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expire(self) -> None:
        self._deadline = None
        if self._waiting():
            self.transport.close()

    def _make_room(self) -> None:
        """One over the bound: close the connection that has waited longest for its request (this
        one when all the others are being answered). A browser's request follows its connection at
        once, so under a flood of new connections the ones kept are the newest and those answered.
        A connection whose request is in its socket, not read yet, is passed over while another
        waits: the loop accepts a burst of connections before it reads any of them, and the user's,
        accepted first in the burst, would otherwise be the one closed.
        (Closed ones leave `connections` a moment later: they are not counted.)"""
        open_ = [c for c in self.connections if isinstance(c, _GuardedH11) and not c.transport.is_closing()]
        if len(open_) > self.max_connections:
            waiting = sorted((c for c in open_ if c._waiting()), key=lambda c: c._waiting_since)
            next((c for c in waiting if not c._unread()), waiting[0]).transport.close()

    def _unread(self) -> bool:
        """Bytes have come in that the loop has not read yet."""
        sock = self.transport.get_extra_info("socket")
        pending = array.array("i", [0])
        try:
            fcntl.ioctl(sock.fileno(), termios.FIONREAD, pending)
        except (AttributeError, OSError):
            return False
        return pending[0] > 0


def guarded_protocol(max_connections: int, request_timeout_s: float) -> type[H11Protocol]:
    """uvicorn's HTTP/1.1 protocol with these bounds."""
    return type(
        "GuardedH11",
        (_GuardedH11,),
        {"max_connections": max_connections, "request_timeout_s": request_timeout_s},
    )
