"""`parla ui`: the memory inspector in the browser. The running daemon serves it (live); without
a daemon this command serves it until Ctrl-C."""

from __future__ import annotations

import asyncio
import signal
import webbrowser

import typer

from ..control import send_command
from ..errors import CommandError, DaemonNotRunning
from .support import CHATS, command, err, load_settings, open_memory, out, running_daemon_chat


def _show(url: str, open_browser: bool) -> None:
    out.print(url, markup=False, soft_wrap=True)
    out.file.flush()  # read at once by whoever started the command (a pipe buffers it otherwise)
    if open_browser and not webbrowser.open(url):
        err.print("parla: no browser could be opened here: open the address above", markup=False)


@command
async def ui(
    no_open: bool = typer.Option(False, "--no-open", help="Print the address without opening a browser."),
) -> None:
    """See and correct what Parla remembers, in the browser (on 127.0.0.1; the address holds a secret
    token: keep it to yourself)."""
    from parla.kernel.local_time import LocalClock
    from parla.ui.app import Inspector
    from parla.ui.server import serve_inspector
    from parla.ui.token import load_token

    settings = load_settings()
    try:
        served = await send_command(settings.control_socket, "ui", timeout=5)
        _show(served["url"], not no_open)
        return
    except DaemonNotRunning:
        pass
    except CommandError as e:  # the daemon runs without it (turned off, its port taken): serve it here
        err.print(f"parla: {e}; serving it from this command instead (nothing live)", markup=False)
    token = await asyncio.to_thread(load_token, settings.ui_token_file)
    async with open_memory(settings) as mem:
        inspector = Inspector(
            mem,
            token,
            current_chat=lambda: running_daemon_chat(settings.control_socket),
            clock=LocalClock(settings.time_zone),
        )
        async with serve_inspector(
            inspector, settings.ui_port, settings.ui_max_connections, settings.ui_request_timeout_s
        ) as serving:
            _show(serving.url, not no_open)
            err.print("The memory inspector runs until Ctrl-C.", markup=False)
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, stop.set)
            try:
                await stop.wait()
            finally:
                for sig in (signal.SIGINT, signal.SIGTERM):
                    loop.remove_signal_handler(sig)


COMMANDS = {"ui": ui}
PANEL = CHATS
