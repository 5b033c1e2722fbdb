"""Switch timing: `python -m bench.switch_timing [--rounds N]`. Prints its figures; asserts nothing.

A spoken conversation wired as the daemon wires it (the chat tools, the speaker on a headless
PulseAudio of its own), against the Live emulator in a child process. Each round the model calls
`switch_chat` with the other chat's id and announces the move (0.3 s of audio); a question typed
right after the decision goes to the new session, whose model answers at once. Timed where it is
heard, on the speaker's monitor, from the emulator sending the tool call:

- cue: the switch cue's first sound, also from the decision (the tool's search done, seen by the
  bench within 5 ms; target ≤ 200 ms);
- answer: the first sound of the answer in the other chat (target ≤ 1.0 s plus the service's
  connect time), split into the announcement (until turnComplete), Parla's move (the old
  connection's close to the new setup arriving: saves drained, the new chat's memory read, TLS and
  websocket opened) and the rest (setup, seed and question to the answer's sound).
Baseline, in the same run: a fresh session's connection alone (`connect` to setupComplete).
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.memory import percentile
from bench.report import Report, Table, parse
from tests.peers.pulse import PulseServer

ANNOUNCEMENT_S = 0.3
ANSWER_HZ = 587.0


def _emulator_main(cert: str, key: str, rounds: int, out: Any) -> None:
    from tests.peers.live_emulator import LiveEmulator, tone, typed_turn

    async def main() -> None:
        marks: dict[int, dict[str, float]] = {}

        async def script(conn: Any) -> None:
            mark = marks.setdefault(conn.index, {})
            mark["setup"] = time.monotonic()
            await conn.complete_setup()
            if conn.index > rounds:  # the baseline's connections: setup only
                await conn.closed.wait()
                return
            while True:  # a question is answered at once; a switch request moves the conversation
                text = await typed_turn(conn, timeout=120)
                if not text.startswith("switch"):
                    mark.setdefault("question", time.monotonic())
                    await conn.reply("Three days.", tone(0.3, ANSWER_HZ))
                    continue
                mark["call"] = time.monotonic()
                await conn.tool_call(
                    {"id": f"s{conn.index}", "name": "switch_chat", "args": {"chat_id": text.split()[-1]}}
                )
                await conn.expect("tool_response")
                await conn.reply("Switching.", tone(ANNOUNCEMENT_S), paced=True)
                mark["announced"] = time.monotonic()
                await conn.closed.wait()
                mark["closed"] = time.monotonic()
                return

        async with LiveEmulator(Path(cert), Path(key), script=script) as emulator:
            out.put(emulator.url)
            await asyncio.to_thread(out.get)  # wait for the parent: it puts None when done
            out.put(marks)

    asyncio.run(main())


def _ms(values: list[float]) -> list[str]:
    if not values:
        return ["", "", "0"]
    return [f"{percentile(values, 0.5):.0f}", f"{percentile(values, 0.95):.0f}", str(len(values))]


async def run(out: Report, pulse: PulseServer, rounds: int) -> None:
    from google import genai
    from google.genai import types

    from parla.daemon.conversation import spoken_conversation
    from parla.daemon.memory_services import open_memory
    from parla.daemon.settings import Settings
    from parla.voice.cues import SWITCH_CUE_HZ
    from tests.peers.gemini_rest import GeminiRestEmulator
    from tests.peers.live_emulator import make_certificate

    tmp = Path(tempfile.mkdtemp(prefix="parla-bench-switch-"))
    cert, key = make_certificate(tmp)
    os.environ["SSL_CERT_FILE"] = str(cert)  # the SDK trusts the emulator's certificate
    os.environ["PARLA_CONFIG_FILE"] = str(tmp / "none.toml")  # not the user's own settings
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    child = ctx.Process(target=_emulator_main, args=(str(cert), str(key), rounds, queue), daemon=True)
    child.start()
    url = await asyncio.to_thread(queue.get, True, 30)
    rest = GeminiRestEmulator().start()
    settings = Settings(
        store_path=tmp / "parla.db",
        gemini_api_key="test-key",
        gemini_base_url=rest.base_url,
        live_url=url,
        summarizer="offline",
    )
    async with open_memory(settings) as mem:
        chats = [(await mem.store.create_chat(title=title)).chat.id for title in ("Sourdough", "Japan trip")]
        recorder = pulse.record_speaker()
        switched_at: list[float] = []
        async with spoken_conversation(mem, chats[0]) as conversation:
            for n in range(rounds):
                target = (n + 1) % 2
                conversation.say(f"switch to {chats[target]}")
                while not conversation.switching:
                    await asyncio.sleep(0.005)
                switched_at.append(time.monotonic())
                conversation.say("How long in Kyoto?")
                while conversation.status.connections < n + 2 or conversation.memory.chat_id != chats[target]:
                    await asyncio.sleep(0.01)
                await asyncio.sleep(1.5)  # the answer plays out
        recorder.stop()

        # Baseline: a fresh connection alone, setup included.
        client = genai.Client(api_key="test-key", http_options=types.HttpOptions(base_url=rest.base_url))
        connects = []
        for _ in range(rounds):
            started = time.monotonic()
            setup = types.LiveConnectConfig(http_options=types.HttpOptions(base_url=url))
            async with client.aio.live.connect(model=settings.live_model, config=setup):
                connects.append((time.monotonic() - started) * 1000)
        queue.put(None)
        marks = await asyncio.to_thread(queue.get, True, 30)
        child.join(5)
    rest.stop()

    cue_ms, decided_ms, answer_ms, announce_ms, move_ms, rest_ms = [], [], [], [], [], []
    for n in range(rounds):
        old, new = marks[n], marks[n + 1]
        call = old["call"]
        cue = recorder.first_tone(SWITCH_CUE_HZ, call)
        answer = recorder.first_tone(ANSWER_HZ, new["setup"])
        if cue is not None:
            cue_ms.append((cue - call) * 1000)
            decided_ms.append((cue - switched_at[n]) * 1000)
        if answer is not None:
            answer_ms.append((answer - call) * 1000)
            rest_ms.append((answer - new["setup"]) * 1000)
        announce_ms.append((old["announced"] - call) * 1000)
        move_ms.append((new["setup"] - old["closed"]) * 1000)
    table = Table(
        ["from the tool call", "p50 ms", "p95 ms", "n"],
        title=f"switch timing, {rounds} switches between two chats, from the emulator's tool call (sound at the monitor)",
    )
    table.row("cue heard", *_ms(cue_ms))
    table.row("cue heard, after the decision (target 200)", *_ms(decided_ms))
    table.row("answer heard in the other chat", *_ms(answer_ms))
    table.row("of which the announcement (0.3 s of audio)", *_ms(announce_ms))
    table.row("of which close -> new setup (Parla)", *_ms(move_ms))
    table.row("of which setup -> answer heard", *_ms(rest_ms))
    table.row("baseline: a connection alone", *_ms(connects))
    out.table(table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10, help="switches to time")
    args, out = parse(parser)
    pulse = PulseServer(Path(tempfile.mkdtemp(prefix="parla-bench-pulse-"))).start()
    os.environ["PULSE_SERVER"] = pulse.env["PULSE_SERVER"]  # before sounddevice loads
    try:
        asyncio.run(run(out, pulse, args.rounds))
    finally:
        pulse.stop()


if __name__ == "__main__":
    main()
