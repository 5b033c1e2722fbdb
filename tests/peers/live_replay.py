"""The Live emulator playing back a trace of `parla doctor --live` (parla.daemon.live_check): each
connection sends the server messages its trace recorded, in order, each once the client has sent
what preceded it in the trace (as many non-audio frames, and after audio, as many audio bytes
since the last non-audio frame), and closes where the server closed. Audio recorded as
`{"bytes": n}` is sent as n bytes of silence. A resumable handle in the trace is issued, so the
resumption it recorded is accepted."""

from __future__ import annotations

import asyncio
import base64
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.peers.live_emulator import LiveConnection, Script


@dataclass(frozen=True)
class Cue:
    """A server message (or close) and what the client sent before it in the trace."""

    msg: dict[str, Any] | None  # None: the server closes here
    close: tuple[int, str] | None
    frames: int  # non-audio frames sent on this connection before it
    audio: int  # audio bytes sent since the last of those (0: not after audio)


def read_trace(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    header, *lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return header, lines


def cues(lines: list[dict[str, Any]]) -> dict[int, list[Cue]]:
    out: dict[int, list[Cue]] = {}
    frames: dict[int, int] = {}
    audio: dict[int, int] = {}
    for line in lines:
        conn, msg = line["conn"], line["msg"]
        if line["dir"] == "out":
            if "setup" in msg:
                continue
            sent_audio = msg.get("realtimeInput", {}).get("audio")
            if sent_audio is not None:
                audio[conn] = audio.get(conn, 0) + sent_audio["bytes"]
            else:
                frames[conn] = frames.get(conn, 0) + 1
                audio[conn] = 0
        elif line["dir"] == "in":
            out.setdefault(conn, []).append(Cue(msg, None, frames.get(conn, 0), audio.get(conn, 0)))
        elif msg.get("by") == "server" and msg.get("code"):
            out.setdefault(conn, []).append(Cue(None, (msg["code"], msg["reason"]), frames.get(conn, 0), 0))
    return out


def with_audio(value: Any) -> Any:
    """The message with `{"bytes": n}` audio made into n bytes of silence."""
    if isinstance(value, dict):
        data = value.get("data")
        if isinstance(data, dict) and "bytes" in data:
            return {**value, "data": base64.b64encode(bytes(data["bytes"])).decode()}
        return {k: with_audio(v) for k, v in value.items()}
    if isinstance(value, list):
        return [with_audio(v) for v in value]
    return value


def _sent(conn: LiveConnection) -> tuple[int, int]:
    """Non-audio frames so far, and audio bytes since the last of them."""
    frames = audio = 0
    for frame in conn.frames:
        if frame.kind == "realtime_input" and frame.audio:
            audio += len(frame.audio)
        else:
            frames, audio = frames + 1, 0
    return frames, audio


def replay(path: Path, timeout: float = 30.0) -> Script:
    _, lines = read_trace(path)
    plan = cues(lines)

    async def script(conn: LiveConnection) -> None:
        loop = asyncio.get_running_loop()
        until = loop.time() + timeout
        async with asyncio.timeout_at(until):
            for cue in plan.get(conn.index, []):
                while True:
                    frames, audio = _sent(conn)
                    if frames > cue.frames or (frames == cue.frames and audio >= cue.audio):
                        break
                    if loop.time() > until:  # its own deadline too: see parla.kernel.tasks
                        raise TimeoutError(f"the client did not send frame {cue.frames} within {timeout:g} s")
                    await asyncio.sleep(0.005)
                if cue.close is not None:
                    await conn.close(*cue.close)
                    return
                assert cue.msg is not None
                update = cue.msg.get("sessionResumptionUpdate")
                if update and update.get("resumable") and update.get("newHandle"):
                    await conn.resumption(update["newHandle"])
                elif "setupComplete" in cue.msg:
                    await conn.complete_setup()
                else:
                    await conn.send(with_audio(cue.msg))
        await conn.closed.wait()

    return script
