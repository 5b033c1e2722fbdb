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

With --spoken the question is said into the microphone right after the decision (a flite
sentence, its first 0.3 s silent) instead of typed, over an announcement of 1.5 s, with echo cancellation off (it turns the user
down while the announcement plays, which would cut the question into pieces): how often the closing session heard any of it
(it must not: it was said in the chat moved to), and how much of it the new session took as one
utterance. The answer lines above then include the time the question took to say.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import multiprocessing as mp
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.memory import percentile
from bench.report import Report, Table, parse
from tests.peers.pulse import PulseServer

ANNOUNCEMENT_S = 0.3
SPOKEN_ANNOUNCEMENT_S = 1.5  # with --spoken: as long as "Switching to Japan trip, last talked Tuesday"
ANSWER_HZ = 587.0


async def until(condition: Callable[[], bool], what: str, seconds: float = 60.0) -> None:
    """Until `condition` holds, checked every 5 ms; a run that never gets there ends naming `what`
    instead of waiting for good."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {seconds:g} s")
        await asyncio.sleep(0.005)


def _loudest(pcm: bytes) -> float:
    from tests.peers.live_emulator import rms

    return max((rms(pcm[i : i + 640]) for i in range(0, len(pcm) - 639, 640)), default=0.0)


def _emulator_main(cert: str, key: str, rounds: int, spoken: bool, out: Any) -> None:
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
            if spoken and conn.index > 0:  # the question said during the switch, then a switch request
                with contextlib.suppress(TimeoutError):  # none: the words were lost
                    mark["heard_s"] = len(await conn.utterance(timeout=8)) / 32000
                    mark["question"] = time.monotonic()
                    await conn.reply("Three days.", tone(0.3, ANSWER_HZ))
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
                await conn.reply("Switching.", tone(SPOKEN_ANNOUNCEMENT_S if spoken else ANNOUNCEMENT_S), paced=True)
                mark["announced"] = time.monotonic()
                await conn.closed.wait()
                mark["closed"] = time.monotonic()
                mark["loudest_after_call"] = _loudest(
                    b"".join(f.audio for f in conn.frames if f.received_at > mark["call"])
                )
                return

        async with LiveEmulator(Path(cert), Path(key), script=script) as emulator:
            out.put(emulator.url)
            await asyncio.to_thread(out.get)  # wait for the parent: it puts None when done
            out.put(marks)

    asyncio.run(main())


def _voiced_span_s(pcm: bytes) -> float:
    """From the first to the last 20 ms window louder than the emulator's threshold."""
    from tests.peers.live_emulator import rms

    loud = [i for i in range(0, len(pcm) - 639, 640) if rms(pcm[i : i + 640]) > 300]
    return (loud[-1] - loud[0] + 640) / 32000 if loud else 0.0


def _ms(values: list[float]) -> list[str]:
    if not values:
        return ["", "", "0"]
    return [f"{percentile(values, 0.5):.0f}", f"{percentile(values, 0.95):.0f}", str(len(values))]


async def run(out: Report, pulse: PulseServer, rounds: int, spoken: bool) -> None:
    from google import genai
    from google.genai import types

    from parla.daemon.conversation import spoken_conversation
    from parla.daemon.memory_services import open_memory
    from parla.daemon.settings import Settings
    from parla.voice.audio.cues import SWITCH_CUE_HZ
    from tests.peers.gemini_rest import GeminiRestEmulator
    from tests.peers.live_emulator import make_certificate
    from tests.peers.pulse import speech

    tmp = Path(tempfile.mkdtemp(prefix="parla-bench-switch-"))
    cert, key = make_certificate(tmp)
    os.environ["SSL_CERT_FILE"] = str(cert)  # the SDK trusts the emulator's certificate
    os.environ["PARLA_CONFIG_FILE"] = str(tmp / "none.toml")  # not the user's own settings
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    child = ctx.Process(target=_emulator_main, args=(str(cert), str(key), rounds, spoken, queue), daemon=True)
    child.start()
    url = await asyncio.to_thread(queue.get, True, 30)
    rest = GeminiRestEmulator().start()
    settings = Settings(
        store_path=tmp / "parla.db",
        gemini_api_key="test-key",
        gemini_base_url=rest.base_url,
        live_url=url,
        summarizer="offline",
        # the echo canceller turns the user down while the announcement plays (double talk),
        # which cuts the question into pieces: without it, what arrives is the question as said
        echo_cancellation=not spoken,
    )
    async with open_memory(settings) as mem:
        chats = [(await mem.store.create_chat(title=title)).chat.id for title in ("Sourdough", "Japan trip")]
        question = speech("How long should we stay in Kyoto?")
        said_s = _voiced_span_s(question)
        recorder = pulse.record_speaker()
        switched_at: list[float] = []
        async with spoken_conversation(mem, chats[0]) as conversation:
            for n in range(rounds):
                target = (n + 1) % 2
                conversation.say(f"switch to {chats[target]}")
                await until(lambda: conversation.switching, "the switch to start")
                switched_at.append(time.monotonic())
                if spoken:
                    await pulse.play_into_mic(question)
                else:
                    conversation.say("How long in Kyoto?")
                await until(
                    lambda n=n, target=target: (
                        conversation.status.connections >= n + 2 and conversation.memory.chat_id == chats[target]
                    ),
                    "the new session in the other chat",
                )
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
    announced = SPOKEN_ANNOUNCEMENT_S if spoken else ANNOUNCEMENT_S
    table.row("cue heard", *_ms(cue_ms))
    table.row("cue heard, after the decision (target 200)", *_ms(decided_ms))
    table.row("answer heard in the other chat", *_ms(answer_ms))
    table.row(f"of which the announcement ({announced:g} s of audio)", *_ms(announce_ms))
    table.row("of which close -> new setup (Parla)", *_ms(move_ms))
    table.row("of which setup -> answer heard", *_ms(rest_ms))
    table.row("baseline: a connection alone", *_ms(connects))
    out.table(table)
    if spoken:
        heard_old = sum(marks[n]["loudest_after_call"] > 300 for n in range(rounds))
        heard_new = [marks[n + 1]["heard_s"] for n in range(rounds) if "heard_s" in marks[n + 1]]
        out.line(
            f"a question spoken from the decision on ({said_s:.2f} s of speech): heard by the closing session"
            f" {heard_old}/{rounds} switches; taken by the new session {len(heard_new)}/{rounds} switches"
            + (
                f", p50 {percentile(heard_new, 0.5):.2f} s of audio (all of it, with the detector's 0.3 s of quiet:"
                f" {said_s + 0.3:.2f} s)"
                if heard_new
                else ""
            )
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10, help="switches to time")
    parser.add_argument("--spoken", action="store_true", help="say the question into the microphone, not type it")
    args, out = parse(parser)
    pulse = PulseServer(Path(tempfile.mkdtemp(prefix="parla-bench-pulse-"))).start()
    os.environ["PULSE_SERVER"] = pulse.env["PULSE_SERVER"]  # before sounddevice loads
    try:
        asyncio.run(run(out, pulse, args.rounds, args.spoken))
    finally:
        pulse.stop()


if __name__ == "__main__":
    main()
