"""Switch fidelity on LoCoMo: `python -m bench.switch_fidelity --data PATH`. Prints figures only.

Does "switch to the chat about ..." find the right chat in a long history of the same two people?
Each conversation's sessions are imported as untitled chats by `parla import` itself (in-process,
offline summarizer and the chosen embedder, a temporary SQLite store per conversation), then each
request from `bench.locomo` goes through the call `parla search` makes (`ChatSearch.search`),
asked the day after the conversation's last session. Measured:
- on the conversation's own store: top-1 / top-3 / MRR over the candidates the search returns
  (an `ambiguous` answer returns only the close ones, as the user hears them), how often it
  switches and how often a switch is right, how often it asks and whether the right chat is
  among at most 3 candidates then;
- foreign requests, made from the next conversation and asked against this store: nothing there
  is what they ask for, so every `switch` is wrong;
- the import time and the search latency (p50 / p95).

The data is CC BY-NC: read from PATH, never written anywhere but the temporary directory.
`--verbose` prints each request with its outcome, for looking at on screen only.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, redirect_stdout
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from bench.locomo import DEVELOPMENT, Conversation, LocomoError, Request, load, requests_for
from bench.memory import percentile
from bench.report import Report, Table, parse
from parla.daemon.cli import app
from parla.daemon.cli.support import load_settings
from parla.daemon.memory_services import open_memory
from parla.memory.imports.importer import external_chat_ids

# Candidates asked of the search: enough for the reciprocal rank to see past the top few.
LIMIT = 10


@dataclass(frozen=True)
class Outcome:
    request: Request
    decision: str
    ranked: list[str]  # chat ids, best first
    millis: float


@dataclass
class History:
    """One conversation imported into its own store."""

    conversation: Conversation
    store_path: Path
    import_seconds: float
    chat_ids: dict[int, str]  # session number -> chat id

    @property
    def asked_at(self) -> datetime:
        return self.conversation.last_activity + timedelta(days=1)

    def session_of(self, chat_id: str) -> int | None:
        return next((n for n, cid in self.chat_ids.items() if cid == chat_id), None)


@dataclass
class Tally:
    """Figures over outcomes whose right chat is known (own) or does not exist (foreign)."""

    outcomes: list[tuple[Outcome, str | None]] = field(default_factory=list)

    def add(self, outcome: Outcome, right: str | None) -> None:
        self.outcomes.append((outcome, right))

    def __len__(self) -> int:
        return len(self.outcomes)

    def _share(self, hits: float, total: int | None = None) -> float:
        total = len(self.outcomes) if total is None else total
        return hits / total if total else float("nan")

    @staticmethod
    def rank(outcome: Outcome, right: str | None) -> int | None:
        return outcome.ranked.index(right) + 1 if right in outcome.ranked else None

    def top(self, k: int) -> float:
        return self._share(sum(1 for o, r in self.outcomes if (self.rank(o, r) or k + 1) <= k))

    @property
    def mrr(self) -> float:
        ranks = [self.rank(o, r) for o, r in self.outcomes]
        return self._share(sum(1 / k for k in ranks if k))

    def decided(self, decision: str) -> list[tuple[Outcome, str | None]]:
        return [(o, r) for o, r in self.outcomes if o.decision == decision]

    def rate(self, decision: str) -> float:
        return self._share(len(self.decided(decision)))

    @property
    def switch_precision(self) -> float:
        switches = self.decided("switch")
        return self._share(sum(1 for o, r in switches if o.ranked[:1] == [r]), len(switches))

    @property
    def ambiguous_holds_right(self) -> float:
        """Of the `ambiguous` answers, those offering at most 3 candidates, the right one among them."""
        asked = self.decided("ambiguous")
        return self._share(sum(1 for o, r in asked if len(o.ranked) <= 3 and r in o.ranked), len(asked))


@contextmanager
def environment(**values: str) -> Iterator[None]:
    """`parla` reads its settings from the environment: set these for the block only."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def import_history(conversation: Conversation, workdir: Path) -> History:
    """The sessions as `parla import` stores, summarises, titles and embeds them."""
    source = workdir / f"{conversation.id}.jsonl"
    lines = conversation.import_lines()
    source.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    store_path = workdir / f"{conversation.id}.db"
    printed = io.StringIO()
    started = time.perf_counter()
    with environment(PARLA_STORE_PATH=str(store_path)), redirect_stdout(printed):
        code = app(["import", str(source), "--json"], standalone_mode=False)
    seconds = time.perf_counter() - started
    if code:
        raise RuntimeError(f"parla import failed for {conversation.id} (exit {code}); its error is above")
    report = json.loads(printed.getvalue())
    if report["imported"] != len(lines) or report["skipped"] or report["not_summarised"]:
        raise RuntimeError(f"parla import of {conversation.id} did not take every session: {report}")
    # the SQLite store derives ids with no user scope: the first candidate is the one it has
    ids = {s.number: external_chat_ids(line["id"])[0] for s, line in zip(conversation.sessions, lines, strict=True)}
    return History(conversation, store_path, seconds, ids)


async def ask(history: History, requests: list[Request]) -> list[Outcome]:
    with environment(PARLA_STORE_PATH=str(history.store_path)):
        settings = load_settings()
    outcomes = []
    async with open_memory(settings) as mem:
        for request in requests:
            started = time.perf_counter()
            result = await mem.search.search(request.text, limit=LIMIT, now=history.asked_at)
            millis = (time.perf_counter() - started) * 1000
            outcomes.append(Outcome(request, result.decision, [c.chat_id for c in result.candidates], millis))
    return outcomes


def show(history: History, outcomes: list[Outcome], foreign: bool) -> None:
    """Each request and what the search did, by session number (--verbose; never to be kept)."""
    for o in outcomes:
        got = [history.session_of(cid) for cid in o.ranked[:3]]
        wanted = "foreign" if foreign else f"session {o.request.session}"
        print(f"  [{wanted}] {o.request.text!r} -> {o.decision} {got}")


def row(table: Table, name: str, own: Tally, foreign: Tally) -> None:
    table.row(
        name,
        len(own),
        *(f"{v:.2f}" for v in (own.top(1), own.top(3), own.mrr, own.rate("switch"), own.switch_precision)),
        *(f"{v:.2f}" for v in (own.rate("ambiguous"), own.ambiguous_holds_right, own.rate("none"))),
        len(foreign),
        *(f"{foreign.rate(d):.2f}" for d in ("switch", "ambiguous", "none")),
    )


COLUMNS = [
    "",
    "asked",
    "top-1",
    "top-3",
    "MRR",
    "switch",
    "sw right",
    "ask",
    "ask<=3ok",
    "none",
    "frgn",
    "f-switch",
    "f-ask",
    "f-none",
]

LEGEND = (
    "(asked: requests for one of the store's chats; switch / ask / none: share of each decision; sw right: "
    "switches to the right chat; ask<=3ok: asks offering at most 3 chats, the right one among them; "
    "frgn: another conversation's requests, f-*: their decisions, every f-switch is wrong)"
)


def measure(
    conversations: list[Conversation],
    workdir: Path,
    seed: int,
    verbose: bool,
    requests: dict[str, list[Request]] | None = None,
    out: Report | None = None,
) -> tuple[Tally, Tally]:
    """Prints the figures per conversation and overall (as text unless `out` says otherwise);
    returns the overall own and foreign tallies. The requests are `requests_for` each
    conversation's, unless given (by conversation id)."""
    out = out or Report(markdown=False)
    selections = {c.id: requests_for(c, seed) for c in conversations}
    asked = requests or {cid: selection.requests for cid, selection in selections.items()}
    histories = []
    for c in conversations:
        history = import_history(c, workdir)
        turns = sum(len(s.turns) for s in c.sessions)
        left_out = (
            ""
            if requests
            else f" ({selections[c.id].adversarial} adversarial and {selections[c.id].spread} multi-session "
            "questions left out)"
        )
        out.line(f"imported {c.id}: {len(c.sessions)} chats, {turns} turns in {history.import_seconds:.1f} s{left_out}")
        histories.append(history)
    table = Table(COLUMNS)
    total_own, total_foreign, millis = Tally(), Tally(), []
    for i, history in enumerate(histories):
        own = asyncio.run(ask(history, asked[history.conversation.id]))
        foreign_requests = asked[histories[(i + 1) % len(histories)].conversation.id]
        others = asyncio.run(ask(history, foreign_requests)) if len(histories) > 1 else []
        own_tally, foreign_tally = Tally(), Tally()
        for o in own:
            own_tally.add(o, history.chat_ids[o.request.session])
            total_own.add(o, history.chat_ids[o.request.session])
        for o in others:
            foreign_tally.add(o, None)
            total_foreign.add(o, None)
        millis += [o.millis for o in own + others]
        row(table, history.conversation.id, own_tally, foreign_tally)
        if verbose:
            show(history, own, foreign=False)
            show(history, others, foreign=True)
    row(table, "all", total_own, total_foreign)
    out.table(table)
    out.line(LEGEND)
    imported = sum(h.import_seconds for h in histories)
    chats = sum(len(h.chat_ids) for h in histories)
    out.line(f"import: {imported:.1f} s for {chats} chats ({imported / chats * 1000:.0f} ms per chat)")
    out.line(
        f"search: {len(millis)} requests, p50 {statistics.median(millis):.1f} ms, p95 {percentile(millis, 0.95):.1f} ms"
    )
    return total_own, total_foreign


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="locomo10.zip, its extracted folder, or locomo10.json")
    parser.add_argument(
        "--conversations",
        default=",".join(DEVELOPMENT),
        help="comma-separated conversation ids (default: the development ones)",
    )
    parser.add_argument("--held-out", action="store_true", help="allow conversations outside the development set")
    parser.add_argument("--embedder", choices=["offline", "gemini"], default="offline")
    parser.add_argument("--summarizer", choices=["offline", "gemini"], default="offline")
    parser.add_argument(
        "--emulator",
        action="store_true",
        help="the Gemini code path against the local REST emulator of the tests (its figures are not Gemini's)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the request wording")
    parser.add_argument("--verbose", action="store_true", help="print every request (data text: never commit)")
    args, out = parse(parser)
    wanted = [c.strip() for c in args.conversations.split(",") if c.strip()]
    outside = [c for c in wanted if c not in DEVELOPMENT]
    if outside and not args.held_out:
        parser.error(
            f"{', '.join(outside)} is not a development conversation; the others are the held-out test, "
            "measured only with --held-out once the work is done"
        )
    try:
        conversations = load(args.data.resolve(), wanted)
    except LocomoError as e:
        sys.exit(f"switch_fidelity: {e}")
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        settings = {
            "PARLA_STORE": "sqlite",
            "PARLA_CONFIG_FILE": str(Path(tmp) / "none.toml"),
            "PARLA_EMBEDDER": args.embedder,
            "PARLA_SUMMARIZER": args.summarizer,
        }
        if args.emulator:
            from tests.peers.gemini_rest import GeminiRestEmulator

            emulator = GeminiRestEmulator().start()
            stack.callback(emulator.stop)
            settings |= {"PARLA_GEMINI_API_KEY": emulator.api_key, "PARLA_GEMINI_BASE_URL": emulator.base_url}
        with environment(**settings):
            given = load_settings()
            own = "the embedder's own"
            out.line(
                f"switch fidelity: {', '.join(wanted)}; embedder {args.embedder}, summarizer {args.summarizer}, "
                f"seed {args.seed}; min match {given.search_min_match or own}, switch score {given.search_switch_score or own}, "
                f"switch margin {given.search_switch_margin or own}"
            )
            measure(conversations, Path(tmp), args.seed, args.verbose, out=out)


if __name__ == "__main__":
    main()
