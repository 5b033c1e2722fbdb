"""The rolling summary of a chat and its verbatim tail: when the unsummarised turns pass
`summary_window_size` or the summary plus those turns pass `chunk_summarize_threshold` tokens,
everything but the last `tail` turns is folded into the summary by one model call and committed
only if no other compaction committed meanwhile (turns appended meanwhile keep their place in the
tail). A young chat that has never been compacted is described by its opening turns instead, so
search finds it early. The summary text also names the chat: a generated title follows it."""

from __future__ import annotations

import logging

import numpy as np

from parla.kernel.tokens import estimate_tokens, truncate_to_tokens
from parla.records.chat import Chat
from parla.records.embedding import EmbeddedText, Embedder, embed_texts, normalize_rows
from parla.records.turn import Turn

from ..config import MemoryConfig
from ..errors import StoreError
from ..store.protocol import ChatRecords, CompactionCommit
from ..summarizers import Summarizer, transcript
from .report import CompactionReport

log = logging.getLogger("parla.compaction")

# Commits refused because another process compacted the same chat first are retried this often.
_MAX_RACES = 3


def title_drift(title_vector: np.ndarray, summary_text: EmbeddedText) -> float:
    """Cosine distance between a title's embedding and the chat's summary text."""
    return 1.0 - float(title_vector @ summary_text.vector)


def history_tokens(rolling_summary: str, turns: list[Turn]) -> int:
    return estimate_tokens(rolling_summary) + sum(estimate_tokens(t.transcript_line()) for t in turns)


def needs_folding(chat: Chat, unsummarised: list[Turn], config: MemoryConfig) -> bool:
    if len(unsummarised) <= config.tail:
        return False
    return (
        len(unsummarised) > config.summary_window_size
        or history_tokens(chat.rolling_summary, unsummarised) > config.chunk_summarize_threshold
    )


class RollingSummary:
    def __init__(self, store: ChatRecords, summarizer: Summarizer, embedder: Embedder, config: MemoryConfig) -> None:
        self.store = store
        self.summarizer = summarizer
        self.embedder = embedder
        self.config = config

    async def fold(self, chat_id: str, report: CompactionReport, read: Chat | None = None) -> tuple[Chat, list[Turn]]:
        """Fold until the unsummarised part is under the triggers again. One step folds at most
        `chunk_summarize_threshold` tokens of turns, so a long imported chat is summarised in
        several bounded calls rather than one huge one; each step commits on its own. Returns the
        chat and the turns that were unsummarised when the run began. `read`: the chat as the
        caller just read it."""
        races = 0
        began: list[Turn] | None = None
        known = read
        while True:
            # after a step, the chat its commit returned (on Supabase each read is a request)
            chat = known or await self.store.get_chat(chat_id)
            unsummarised = await self.store.load_turns(chat_id, chat.summarized_through + 1)
            report.tokens_after = history_tokens(chat.rolling_summary, unsummarised)
            if began is None:
                report.tokens_before, began = report.tokens_after, unsummarised
            if not needs_folding(chat, unsummarised, self.config):
                return await self._describe_young(chat, unsummarised, report), began
            folded = self._fold_step(unsummarised[: -self.config.tail])
            summary = truncate_to_tokens(
                await self.summarizer.rolling_summary(chat.rolling_summary, folded, self.config.summary_token_cap),
                self.config.summary_token_cap,
            )
            (summary_text,) = await embed_texts(self.embedder, [summary])
            title = await self._title(chat, summary, summary_text, chat.turn_count)
            known = committed = await self.store.commit_compaction(
                CompactionCommit(
                    chat_id=chat_id,
                    expected_version=chat.compaction_version,
                    summarized_through=folded[-1].seq,
                    rolling_summary=summary,
                    summary_text=summary_text,
                    title=title,
                )
            )
            if committed is None:
                races += 1
                if races >= _MAX_RACES:
                    raise StoreError(f"chat {chat_id} kept being compacted elsewhere; gave up after {races} tries")
                continue
            report.turns_folded += len(folded)
            report.described = True
            report.titled = title or report.titled

    def _fold_step(self, foldable: list[Turn]) -> list[Turn]:
        budget = self.config.chunk_summarize_threshold
        used = 0
        for i, turn in enumerate(foldable):
            used += estimate_tokens(turn.transcript_line())
            if used > budget and i > 0:
                return foldable[:i]
        return foldable

    async def _describe_young(self, chat: Chat, unsummarised: list[Turn], report: CompactionReport) -> Chat:
        """Before its first compaction a chat is described (and searchable) by its opening turns."""
        if chat.summarized_through > 0 or not unsummarised:
            return chat
        opening = truncate_to_tokens(
            transcript(unsummarised[: self.config.search_opening_turns]), self.config.summary_token_cap
        )
        if opening == chat.summary_text:
            return chat
        (summary_text,) = await embed_texts(self.embedder, [opening])
        title = await self._title(chat, opening, summary_text, len(unsummarised))
        if await self.store.set_summary_text(chat.id, summary_text, chat.compaction_version, title=title):
            report.described = True
            report.titled = title
        return await self.store.get_chat(chat.id)

    async def _title(self, chat: Chat, text: str, summary_text: EmbeddedText, turns: int) -> str | None:
        """A new generated title for the chat described by `text`, or None to keep its title.
        A user's title is kept. The first title waits for `title_min_turns` turns, so it names
        the topic rather than the greeting; a generated title is redone only when the
        summary text has drifted further than `title_drift_distance` from it."""
        if chat.title is not None and not chat.title_generated:
            return None
        if chat.title is None:
            return await self.summarizer.title(text) if turns >= self.config.title_min_turns else None
        limit = self.config.title_drift_distance
        if limit is None:
            limit = self.embedder.calibration.title_drift_distance
        if title_drift(normalize_rows(await self.embedder.embed([chat.title], "query"))[0], summary_text) <= limit:
            return None
        title = await self.summarizer.title(text)
        if title != chat.title:
            log.info("title refreshed for chat %s", chat.id, extra={"event": "title_refreshed", "chat_id": chat.id})
            return title
        return None
