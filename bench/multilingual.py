"""Switching chats in the user's language: `python -m bench.multilingual`. Prints its figures.

The hand-written set `tests/data/multilingual_switch.json`: 16 chats (4 each in Italian, Spanish,
German and English) and 34 switch requests in Italian, Spanish and German, 12 about a chat in the
request's own language and 22 about a chat in another. Each chat is compacted offline (extractive
summary, facts) and embedded, then every request goes through the same search `parla search`
makes. Measured for the offline embedder (WordLlama) and for the Gemini embedder's code path, the
real google-genai SDK against the local REST emulator, which embeds with a multilingual sentence
model (its figures are the emulator's, not Gemini's). Prints, per embedder, top-1 on same-language
and cross-language requests, the share where the decision is a `switch` to the right chat, and
where it is `none`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from bench.report import Report as Output
from bench.report import Table, parse
from parla.memory.compaction.compactor import Compactor
from parla.memory.config import MemoryConfig
from parla.memory.retrieval.search import ChatSearch
from parla.memory.store.sqlite.store import SQLiteChatStore
from parla.memory.summarizers.extractive import ExtractiveSummarizer
from parla.records.embedding import Embedder
from parla.records.turn import Turn

SET_PATH = Path(__file__).parents[1] / "tests" / "data" / "multilingual_switch.json"


@dataclass
class Outcome:
    language: str
    chat_language: str
    request: str
    expected: str
    decision: str
    ranked: list[str]

    @property
    def same_language(self) -> bool:
        return self.language == self.chat_language

    @property
    def top1(self) -> bool:
        return bool(self.ranked) and self.ranked[0] == self.expected

    @property
    def switched_right(self) -> bool:
        return self.decision == "switch" and self.top1


@dataclass
class Report:
    embedder: str
    outcomes: list[Outcome] = field(default_factory=list)

    def share(self, same_language: bool | None, what: str) -> float:
        chosen = [o for o in self.outcomes if same_language is None or o.same_language == same_language]
        if what == "none":
            return sum(o.decision == "none" for o in chosen) / len(chosen)
        return sum(getattr(o, what) for o in chosen) / len(chosen)

    def figures(self) -> list[tuple[str, int, float, float, float]]:
        """Per kind of request: how many, top-1, a switch to the right chat, `none`."""
        return [
            (
                label,
                sum(1 for o in self.outcomes if same is None or o.same_language == same),
                self.share(same, "top1"),
                self.share(same, "switched_right"),
                self.share(same, "none"),
            )
            for label, same in (("same language", True), ("cross language", False), ("all", None))
        ]

    def misses(self) -> list[str]:
        return [
            f"miss [{o.language}->{o.chat_language}] {o.request!r}: {o.decision} {o.ranked[:3]}, wanted {o.expected}"
            for o in self.outcomes
            if not o.top1
        ]

    def lines(self) -> list[str]:
        rows = [f"{self.embedder}: {len(self.outcomes)} requests"]
        for label, n, top1, right, none in self.figures():
            rows.append(
                f"  {label:<15} n={n:<3} top-1 {top1:.2f}  switch to the right chat {right:.2f}  none {none:.2f}"
            )
        return rows + [f"  {miss}" for miss in self.misses()]


def load_set() -> dict:
    data: dict = json.loads(SET_PATH.read_text(encoding="utf-8"))
    return data


async def evaluate(store: SQLiteChatStore, embedder: Embedder, config: MemoryConfig | None = None) -> Report:
    """Store and compact the set's chats in `store` (empty), then run every request."""
    config = config or MemoryConfig.model_validate({})
    data = load_set()
    compactor = Compactor(store, ExtractiveSummarizer(), embedder, config)
    names: dict[str, str] = {}
    for name, chat in data["chats"].items():
        turns = [Turn.of("user" if i % 2 == 0 else "model", text) for i, text in enumerate(chat["turns"])]
        chat_id = (await store.create_chat(turns=turns)).chat.id
        await compactor.compact(chat_id)
        names[chat_id] = name
    search = ChatSearch(store, embedder, config)
    report = Report(embedder.name)
    for language, request, expected in data["requests"]:
        result = await search.search(request, limit=3)
        report.outcomes.append(
            Outcome(
                language,
                data["chats"][expected]["language"],
                request,
                expected,
                result.decision,
                [names[c.chat_id] for c in result.candidates],
            )
        )
    return report


async def _run(out: Output, embedders: list[Embedder]) -> None:
    # what is measured is which chat each request finds, not how fast: on a busy machine the 1 s
    # default would answer some requests by words and titles alone
    config = MemoryConfig.model_validate({"search_embed_timeout_s": 60})
    table = Table(["embedder", "requests", "n", "top-1", "switch to the right chat", "none"])
    misses = []
    with tempfile.TemporaryDirectory() as folder:
        for n, embedder in enumerate(embedders):
            async with SQLiteChatStore(Path(folder) / f"{n}.db") as store:
                report = await evaluate(store, embedder, config)
            for label, count, top1, right, none in report.figures():
                table.row(report.embedder, label, count, f"{top1:.2f}", f"{right:.2f}", f"{none:.2f}")
            misses += [f"{report.embedder}: {miss}" for miss in report.misses()]
    out.table(table)
    for miss in misses:
        out.line(miss)


def main() -> None:
    _, out = parse(argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter))
    from parla.daemon.memory_services import gemini_client
    from parla.daemon.settings import Settings
    from parla.memory.embedders.gemini import GeminiEmbedder
    from parla.memory.embedders.offline import OfflineEmbedder
    from tests.peers.gemini_rest import GeminiRestEmulator

    emulator = GeminiRestEmulator().start()
    try:
        settings = Settings(gemini_api_key=emulator.api_key, gemini_base_url=emulator.base_url)
        asyncio.run(_run(out, [OfflineEmbedder(), GeminiEmbedder(gemini_client(settings))]))
    finally:
        emulator.stop()


if __name__ == "__main__":
    main()
