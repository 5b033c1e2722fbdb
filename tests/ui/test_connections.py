"""The inspector's port under connections from anyone on the machine, before any token check: idle
ones are bounded and closed, a client that sends its request slowly is closed too, and the page is
served throughout."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable
from urllib.parse import urlsplit

import httpx
import pytest

from parla.memory.store.sqlite.store import SQLiteChatStore
from tests.ui.conftest import serve_sample, ui_settings

pytestmark = pytest.mark.tier("fast")

MAX = 8
TIMEOUT_S = 1.0


async def _until(condition: Callable[[], bool], limit: float = 15.0) -> None:
    async with asyncio.timeout(limit):
        while not condition():
            await asyncio.sleep(0.02)


async def test_idle_connections_are_bounded_and_closed_and_the_page_is_served(tmp_path):
    settings = ui_settings(tmp_path, ui_max_connections=MAX, ui_request_timeout_s=TIMEOUT_S)
    async with SQLiteChatStore(tmp_path / "parla.db") as store, serve_sample(store, settings) as served:
        idle = [await asyncio.open_connection("127.0.0.1", served.serving.port) for _ in range(100)]
        readers = [reader for reader, _ in idle]
        try:
            reads = [asyncio.create_task(reader.read()) for reader in readers]  # each sees the server close
            # past the bound, each new connection closes at once (nothing held for it)
            await _until(lambda: sum(t.done() for t in reads) >= len(idle) - MAX)
            # the user's page still comes: its connection takes the place of one that has waited longer
            async with httpx.AsyncClient() as http:
                page = await http.get(served.url)
            assert page.status_code == 200 and "Two weeks in Japan" in page.text
            await _until(lambda: all(t.done() for t in reads))  # and the rest time out
            assert [t.result() for t in reads] == [b""] * len(idle)
        finally:
            for _, writer in idle:
                writer.close()


async def test_a_request_sent_slowly_is_closed(tmp_path):
    settings = ui_settings(tmp_path, ui_request_timeout_s=TIMEOUT_S)
    async with SQLiteChatStore(tmp_path / "parla.db") as store, serve_sample(store, settings) as served:
        reader, writer = await asyncio.open_connection("127.0.0.1", served.serving.port)
        try:
            writer.write(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            closed = asyncio.create_task(reader.read())
            async with asyncio.timeout(15):
                while not closed.done():  # a byte of a header that never ends, every 50 ms
                    writer.write(b"a")
                    await asyncio.sleep(0.05)
            assert closed.result() == b""
        finally:
            writer.close()


async def test_a_request_that_came_in_a_burst_of_connections_is_answered(tmp_path):
    # CI, the flood scenario (bench.faults): the user's page failed with ReadError('') now and then.
    # Its request was in the socket, but a burst of newer connections was accepted before the loop
    # read it, and each made room by closing the connection that had waited longest: the user's.
    settings = ui_settings(tmp_path, ui_max_connections=MAX, ui_request_timeout_s=30.0)
    async with SQLiteChatStore(tmp_path / "parla.db") as store, serve_sample(store, settings) as served:
        address = ("127.0.0.1", served.serving.port)
        older = [await asyncio.open_connection(*address) for _ in range(MAX)]
        await asyncio.sleep(0.2)  # accepted, each waiting for a request that never comes
        target = urlsplit(served.url)
        # Without letting the loop run, so the kernel queues them all (the listening backlog is MAX):
        # the user's connection and its request, then MAX more connections that send nothing.
        user = socket.create_connection(address)
        burst = [socket.create_connection(address) for _ in range(MAX)]
        try:
            user.sendall(f"GET {target.path}?{target.query} HTTP/1.1\r\nHost: {target.netloc}\r\n\r\n".encode())
            user.setblocking(False)
            loop = asyncio.get_running_loop()
            answer = await asyncio.wait_for(loop.sock_recv(user, 65536), 15)
            assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
        finally:
            user.close()
            for s in burst:
                s.close()
            for _, writer in older:
                writer.close()
