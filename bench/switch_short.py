"""Switch calibration on short chats: `python -m bench.switch_short --data PATH`. Prints figures only.

Everyday chats run 10-40 turns, shorter than LoCoMo's sessions; the search thresholds were set on
longer ones. Each development conversation's sessions are cut into consecutive chats of 10-40
turns (lengths drawn by a seeded generator; a tail under 10 turns joins the chat before it), each
imported as its own untitled chat by `parla import`, exactly as `bench.switch_fidelity` imports
whole sessions; a request (made as there) belongs to the short chat that holds all its evidence
(a question whose evidence spans two short chats is left out, and counted). Printed: the same
table as `bench.switch_fidelity` for the short chats and, in the same run, for the whole sessions,
so the share of confident switches that are right ("sw right", the 90% the calibration keeps)
is compared on both.

The data is CC BY-NC: read from PATH, never written anywhere but the temporary directory.
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import sys
import tempfile
from datetime import timedelta
from pathlib import Path

from bench.locomo import _EVIDENCE, DEVELOPMENT, Conversation, LocomoError, Request, Session, load, requests_for
from bench.report import parse
from bench.switch_fidelity import environment, measure
from parla.daemon.cli.support import load_settings

SHORTEST, LONGEST = 10, 40


@dataclasses.dataclass(frozen=True)
class ShortChats:
    conversation: Conversation  # its sessions are the short chats, numbered from 1
    requests: list[Request]
    spanning: int  # requests left out: their evidence is in two short chats


def short_chats(conversation: Conversation, seed: int) -> ShortChats:
    pieces: list[Session] = []
    home: dict[str, int] = {}  # dialogue id -> the short chat that holds it
    rng = random.Random(f"{seed}:{conversation.id}:short")
    for session in conversation.sessions:
        bounds, start = [], 0
        while start < len(session.turns):
            end = start + rng.randint(SHORTEST, LONGEST)
            if len(session.turns) - end < SHORTEST:
                end = len(session.turns)
            bounds.append((start, end))
            start = end
        for k, (a, b) in enumerate(bounds):
            number = len(pieces) + 1
            spoken = session.spoken[a:b]
            home.update((dia_id, number) for dia_id in spoken)
            pieces.append(
                Session(
                    number=number,
                    started=session.started + timedelta(minutes=k),
                    turns=session.turns[a:b],
                    dialogue_ids=frozenset(spoken),
                    spoken=spoken,
                )
            )
    requests, spanning = [], 0
    for request in requests_for(conversation, seed).requests:
        evidence = conversation.questions[request.question].evidence
        found = {home.get(f"D{s}:{t}") for item in evidence for s, t in _EVIDENCE.findall(item)}
        if len(found) != 1 or None in found:
            spanning += 1
            continue
        requests.append(dataclasses.replace(request, session=found.pop()))
    return ShortChats(dataclasses.replace(conversation, sessions=pieces), requests, spanning)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="locomo10.zip, its extracted folder, or locomo10.json")
    parser.add_argument("--conversations", default=",".join(DEVELOPMENT), help="comma-separated development ids")
    parser.add_argument("--seed", type=int, default=0, help="seed of the cuts and of the request wording")
    args, out = parse(parser)
    wanted = [c.strip() for c in args.conversations.split(",") if c.strip()]
    if outside := [c for c in wanted if c not in DEVELOPMENT]:
        parser.error(f"{', '.join(outside)} is not a development conversation (the others are held out)")
    try:
        conversations = load(args.data.resolve(), wanted)
    except LocomoError as e:
        sys.exit(f"switch_short: {e}")
    shorts = [short_chats(c, args.seed) for c in conversations]
    with tempfile.TemporaryDirectory() as tmp:
        settings = {"PARLA_STORE": "sqlite", "PARLA_CONFIG_FILE": str(Path(tmp) / "none.toml")}
        # a busy machine must not turn a search by meaning into one by words
        settings |= {"PARLA_EMBEDDER": "offline", "PARLA_SUMMARIZER": "offline", "PARLA_SEARCH_EMBED_TIMEOUT_S": "60"}
        with environment(**settings):
            given = load_settings()
            out.line(
                f"switch on short chats: {', '.join(wanted)}; offline embedder and summarizer, seed {args.seed}; "
                f"thresholds: {given.search_min_match or 'the embedder own'} (min match), "
                f"{given.search_switch_score or 'the embedder own'} (switch score)"
            )
            lengths = [len(p.turns) for s in shorts for p in s.conversation.sessions]
            spanning = sum(s.spanning for s in shorts)
            out.line(
                f"short chats: {len(lengths)} chats of {min(lengths)}-{max(lengths)} turns "
                f"({sum(lengths) / len(lengths):.1f} on average; sessions cut at {SHORTEST}-{LONGEST}); "
                f"{spanning} requests left out (evidence in two short chats)"
            )
            short_dir = Path(tmp) / "short"
            short_dir.mkdir()
            measure(
                [s.conversation for s in shorts],
                short_dir,
                args.seed,
                verbose=False,
                requests={s.conversation.id: s.requests for s in shorts},
                out=out,
            )
            sessions = sum(len(c.sessions) for c in conversations)
            out.line(f"whole sessions: {sessions} chats")
            whole_dir = Path(tmp) / "whole"
            whole_dir.mkdir()
            measure(conversations, whole_dir, args.seed, verbose=False, out=out)


if __name__ == "__main__":
    main()
