"""Websocket keepalive as a slow service answers it: pongs that come late, or never."""

from __future__ import annotations

import asyncio
from typing import Any

from websockets.asyncio.server import ServerConnection
from websockets.frames import OP_PONG, Frame


def slow_pongs(delay: float | None) -> type[ServerConnection]:
    """A server connection that answers pings `delay` seconds late (None: never)."""

    class SlowPongs(ServerConnection):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            send_frame = self.protocol.send_frame
            tasks: set[asyncio.Task[None]] = set()

            async def later(frame: Frame) -> None:
                assert delay is not None
                await asyncio.sleep(delay)
                async with self.send_context():
                    send_frame(frame)

            def delayed(frame: Frame) -> None:
                if frame.opcode is not OP_PONG:
                    send_frame(frame)
                elif delay is not None:
                    task = asyncio.get_running_loop().create_task(later(frame))
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)

            self.protocol.send_frame = delayed  # type: ignore[method-assign]

    return SlowPongs
