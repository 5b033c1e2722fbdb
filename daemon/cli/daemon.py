"""`parla run` (the daemon in the foreground) and the commands that talk to it over the control
socket: status, switch, new, talk, mute, unmute, say, stop. Without a running daemon they say so
and how to start it."""

from __future__ import annotations

import asyncio
import signal
from contextlib import suppress
from datetime import datetime
from typing import Any

import typer
from rich.markup import escape

from .. import service
from ..control import send_command
from ..errors import CommandFailed, ConfigError, DaemonNotRunning
from ..start_chat import SAID
from .support import TALK, command, emit_json, err, load_settings, out
from .voice import chat_for


@command
async def run(
    chat: str | None = typer.Option(
        None,
        "--chat",
        help="Chat to start in (id, id start or title); default: where you last talked with Parla or last chose.",
    ),
    new: bool = typer.Option(False, "--new", help="Start in a new chat."),
) -> None:
    """Run the Parla daemon in the foreground until `parla stop`, Ctrl-C or SIGTERM."""
    from ..memory_services import open_memory
    from ..supervisor import Daemon

    settings = load_settings()
    if not settings.has_gemini_key:
        raise ConfigError(
            "Parla needs a Gemini API key to talk: create one at https://aistudio.google.com/apikey, then "
            f"`export GEMINI_API_KEY=...` (for the service, put it in {service.env_file()}). Without a key, "
            "`parla chats`, `show`, `search`, `import` and `stats` work"
        )
    async with open_memory(settings) as mem:
        started = await chat_for(mem, chat, new)
        chat_id, title = started.chat_id, started.title
        daemon = Daemon(mem, chat_id, why=started.why)
        loop = asyncio.get_running_loop()

        def stop() -> None:
            service.notify("STOPPING=1")
            daemon.stop()

        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop)
        how = {
            "wake": f"say {settings.wake_phrase!r} to talk",
            "push_to_talk": "`parla talk` opens a session",
            "always_on": "listening",
        }[settings.activation]
        serving = asyncio.create_task(daemon.serve(), name="daemon:serve")
        ready = asyncio.create_task(daemon.ready.wait(), name="daemon:ready")
        try:
            # "running" only once it is: a daemon that cannot start (a second one, no microphone)
            # says why and nothing else.
            await asyncio.wait({serving, ready}, return_when=asyncio.FIRST_COMPLETED)
            if ready.done():
                where = f"{title} ({chat_id[:8]}), {SAID[started.why]}"
                err.print(f"Parla is running in {where}: {how}. `parla stop` ends it.", markup=False)
                if daemon.inspector is not None:  # the address without its token: this may reach the journal
                    err.print(f"Its memory is on {daemon.inspector.address}: `parla ui` opens it.", markup=False)
                service.notify("READY=1", f"STATUS=in {title}: {how}")
            await serving
        finally:
            ready.cancel()
            if not serving.done():  # cancelled from outside: the daemon's own shutdown runs
                serving.cancel()
                with suppress(asyncio.CancelledError):
                    await serving
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)
        kept, lost = daemon.status.kept_turns, daemon.status.lost_turns
        said = []
        if kept:
            where = mem.refused.path
            said.append(f"{kept} turns the store did not take in time are kept in {where} and stored at the next start")
        if lost:
            said.append(f"{lost} turns could be neither stored nor kept (the log says why)")
        if said:
            err.print(f"Parla stopped; {'; '.join(said)}.", markup=False)
            return
    err.print("Parla stopped; everything said is stored.", markup=False)


async def _send(cmd: str, **args: Any) -> dict[str, Any]:
    return await send_command(load_settings().control_socket, cmd, **args)


def _chat_name(card: dict[str, Any]) -> str:
    return f"{card['title']} ({card['chat_id'][:8]})"


@command
async def status(as_json: bool = typer.Option(False, "--json", help="Print as JSON.")) -> None:
    """What the daemon is doing: state, current chat, session age, outbox depth, refused turns, last error."""
    try:
        s = await _send("status")
    except DaemonNotRunning:
        if not as_json:
            raise
        emit_json({"running": False}, "status")  # scripts read the answer, the exit code says the same
        raise typer.Exit(1) from None
    if as_json:
        emit_json({"running": True, **s}, "status")
        return
    age = f", session {s['session_age_s']:.0f}s old" if s["session_age_s"] is not None else ""
    out.print(f"{s['state']}{' (muted)' if s['muted'] else ''}{age}; activation {s['activation']}")
    chat = s["chat"]
    out.print(f"chat: {escape(chat['title'] or '(untitled)')} ({chat['id'][:8]}), {SAID[chat['why']]}")
    outbox = s["outbox"]
    if outbox["waiting"] or outbox["refused"] or outbox["set_aside"]:
        aside = f", {outbox['set_aside']} damaged files set aside" if outbox["set_aside"] else ""
        out.print(f"outbox: {outbox['waiting']} writes waiting to be sent, {outbox['refused']} refused{aside}")
    if outbox.get("offline"):
        out.print("store: unreachable; chats are read from this device's copy, writes wait in the outbox")
    if outbox["problem"]:
        out.print(f"outbox problem: {escape(outbox['problem'])}")
    for queued in outbox.get("elsewhere", ()):
        out.print(
            f"outbox: {queued['waiting'] + queued['refused']} writes wait for another Supabase project, "
            f"{escape(queued['project'])}; kept until sent there or dropped (`parla outbox list` says how)"
        )
    if fill := s.get("copy_fill"):
        out.print(f"local copy: {escape(_copy_held(fill))}")
    reembed = s.get("reembed")
    if reembed and reembed["state"] != "done":
        share = f"{reembed['done']}/{reembed['total']} texts" if reembed["total"] else "starting"
        out.print(f"re-embedding with {escape(reembed['embedder'])}: {reembed['state']}, {share}")
        if reembed["error"]:
            out.print(f"re-embed error: {escape(reembed['error'])}")
    queue = s.get("summaries")
    if queue and (queue["waiting"] or queue["done"]):
        paused = f"; paused {queue['paused_for_s']:.0f} s" if queue["paused_for_s"] else ""
        error = f" ({escape(queue['last_error'])})" if queue["last_error"] and queue["waiting"] else ""
        out.print(f"summaries: {queue['waiting']} chats waiting, {queue['done']} done since the start{paused}{error}")
    if s.get("mcp_servers"):
        out.print(f"MCP servers: {escape(', '.join(_mcp_server(m) for m in s['mcp_servers']))}")
    if s.get("session_tools") is not None:
        out.print(f"the open session declared {len(s['session_tools'])} tools")
    if s["refused_turns"]:
        out.print(f"refused turns kept locally: {s['refused_turns']} (`parla doctor` says where)")
    for span, figures in s["voice_to_voice"].items():
        if figures["turns"]:
            out.print(
                f"voice to voice ({span}, {figures['turns']} turns): p50 {figures['total_p50_ms']:.0f} ms, "
                f"p95 {figures['total_p95_ms']:.0f} ms; Parla's part p50 {figures['parla_p50_ms']:.0f} / "
                f"p95 {figures['parla_p95_ms']:.0f} ms, the service's p50 {figures['service_p50_ms']:.0f} / "
                f"p95 {figures['service_p95_ms']:.0f} ms"
            )
    if s["last_error"]:
        out.print(f"last error: {escape(s['last_error'])}")


def _copy_held(fill: dict[str, Any]) -> str:
    """Up to when this device's copy holds every chat (what offline reads answer for), and the fill."""
    at = fill["filled_at"] and datetime.fromisoformat(fill["filled_at"]).astimezone()
    held = f"every chat on Supabase as of {at:%Y-%m-%d %H:%M}" if at else "not yet every chat on Supabase"
    if fill["state"] == "filling":
        return f"{held}; filling, {fill['chats_done']} of {fill['chats_total']} chats"
    if fill["state"] in ("offline", "failed"):
        return f"{held}; the fill waits ({fill['error']})"
    return held


def _mcp_server(server: dict[str, Any]) -> str:
    if server["state"] == "running":
        return f"{server['name']} running ({len(server['tools'])} tools)"
    why = f" after {server['last_error']}" if server["state"] == "restarting" and server["last_error"] else ""
    return f"{server['name']} {server['state']}{why}"


@command
async def switch(
    query: str = typer.Argument(
        ..., help="A chat id, id start (4+ characters) or exact title, or what the chat was about."
    ),
) -> None:
    """Move the daemon to a chat by id or title, or to the chat a description means (the open
    session carries on there)."""
    answer = await _send("switch", query=query)
    if answer["result"] in ("switching", "already_here"):
        verb = "Switched to" if answer["result"] == "switching" else "Already in"
        out.print(f"{verb} {escape(_chat_name(answer))}, last talked {answer['last_talked']}.")
    elif answer["result"] == "ambiguous":
        names = "; ".join(f"{_chat_name(c)}, {c['last_talked']}" for c in answer["candidates"])
        raise CommandFailed(f"{query!r} could mean several chats: {names}; say more, or use the chat id")
    else:
        raise CommandFailed(f"no chat is about {query!r}; `parla new` starts one")


@command
async def new(title: str | None = typer.Argument(None, help="A title for the new chat.")) -> None:
    """Start a new chat in the daemon (the current one is kept and summarised)."""
    answer = await _send("new", title=title)
    out.print(f"Now in a new chat {escape(_chat_name(answer))}.")


@command
async def talk(
    wait: float = typer.Option(30.0, min=0, help="Seconds to wait for the session to open (0: do not wait)."),
) -> None:
    """Open a live session now (push-to-talk, or without waiting for the wake phrase). Waits until
    the session is open and says so; exits 1 with the reason when it cannot open."""
    answer = await _send("talk", wait=wait, timeout=wait + 10)
    result = answer["result"]
    if result == "failed":
        raise CommandFailed(f"the session could not open: {answer['error']}")
    if result == "activating" and wait:
        why = f" (last error: {answer['last_error']})" if answer.get("last_error") else ""
        raise CommandFailed(f"the session did not open within {wait:g}s{why}; `parla status` says when it does")
    out.print(
        {"already_active": "A session is already open.", "listening": "Listening."}.get(result, "A session is opening.")
    )


@command
async def mute() -> None:
    """Stop hearing the microphone (no wake phrase, nothing sent) until `parla unmute`."""
    await _send("mute")
    out.print("Muted.")


@command
async def unmute() -> None:
    """Hear the microphone again."""
    await _send("unmute")
    out.print("Unmuted.")


@command
async def say(
    text: str = typer.Argument(..., help="What to say to Parla; it answers by voice."),
    wait: float = typer.Option(30.0, min=0, help="Seconds to wait for the answer (0: do not wait)."),
) -> None:
    """A typed turn in the current chat, answered by voice (opens a session if none is open).
    Says whether it was answered (and stored), is still queued, or failed (the text is kept
    either way)."""
    answer = await _send("say", text=text, wait=wait, timeout=wait + 10)
    result = answer["result"]
    kept = answer.get("kept")
    if result == "answered" and kept:
        out.print(f"Answered, not stored yet (kept in {kept} until the store takes it): {escape(answer['answer'])}")
    elif result == "answered":
        out.print(f"Answered: {escape(answer['answer'])}")
    elif result == "failed":
        where = "stored in the chat, unanswered" if answer["stored"] else "kept, sent when a session opens"
        where = f"kept in {kept}, stored when Parla next starts" if kept else where
        raise CommandFailed(f"not answered: {answer['error']}; your text is {where}")
    elif result == "queued":
        why = f" (last error: {answer['last_error']})" if answer.get("last_error") else ""
        out.print(f"Queued: not answered within {wait:g}s; Parla answers when the session is up{why}.")
    else:
        out.print("Sent." if result == "sent" else "Sent; a session is opening.")


@command
async def stop() -> None:
    """Stop the daemon (what was said is stored first)."""
    await _send("stop")
    out.print("Stopping.")


COMMANDS = {
    "run": run,
    "status": status,
    "switch": switch,
    "new": new,
    "talk": talk,
    "mute": mute,
    "unmute": unmute,
    "say": say,
    "stop": stop,
}
PANEL = TALK
