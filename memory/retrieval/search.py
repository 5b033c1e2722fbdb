"""Chat search by meaning: which chat does a spoken request mean?

Two stages. First the request's topic (`language.requests`: the request without the words that
lead into it, "take me to the chat about", and without the date it names) is embedded as a query
and matched against every embedded text of every chat (windows of what was said, the chat's
title and description, chunk and meta summaries, fact blocks); the store returns the best chats,
each with its few most similar texts. Then each of those texts is scored again by the evidence
its words give (`evidence`): each content word of the topic carries information by how rare it is
in the user's own windows (a name said in every chat little, a rare word a lot), a text is
credited each word it holds (static word vectors, so "painted" is near "painting"), a long text
less per word (a summary that holds every word because it holds many does not beat the turn it
summarises), and neighbouring windows of a chat are also read as one span (evidence spread over
turns adds up). A text's match is the mean of its similarity and that word score (a title's is
its word score alone); a chat counts with its best text or span.

The chat's score adds a bonus when the request names a date the chat was active on ("the chat
from yesterday", "in early January"), by how many of the chats found the date sets apart, and a
small recency bonus that halves every `search_recency_half_life_days`. The decision:
- `none`: no chat's match reaches `min_score` (nothing the user talked about is that close);
- a name the request writes with a capital that no chat says ("my trip to Iceland"): a chat that
  never says it is not surely about it, so no switch: `none` when the name carries as much of the
  request's information as the words the closest chat holds, else `ambiguous`;
- `switch`: the top chat's match reaches `switch_score` and its score leads the next one by at
  least `switch_margin`;
- `ambiguous`: otherwise, with the few candidates close to the top for the model to ask about.
Apart from a name no chat says, no keyword rule takes part: every comparison is between vectors;
exact words only weigh more because the same word has the same vector.

While the store's vectors are rebuilt for another embedder, the request is embedded by the one
that made the vectors still stored, when it can be used here (`serving`), and scored with its
thresholds. When the request cannot be embedded within `search_embed_timeout_s` (a key set and no
network, a re-embed running whose old embedder cannot be used), the search does not wait or fail:
it answers by words and titles. The chats come from the word index of what was said (the one recall uses) and from
every chat's title, each text scored by the request's words as in the second stage, with no
embedding similarity; the result says so (`by_words`) and the decision follows the same rules.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Callable
from datetime import datetime, timedelta

import numpy as np
from pydantic import BaseModel

from parla.kernel.tasks import cancel_and_wait
from parla.records.chat import Chat
from parla.records.embedding import Embedder, embed_texts
from parla.records.search_result import Candidate, SearchResult
from parla.records.turn import MessageRange, utcnow

from ..config import MemoryConfig
from ..embedders.offline import WordTable
from ..errors import EmbedderMismatch, EmptyRequest, ModelError, Reembedding
from ..language.dates import DateSpan, mentioned_date
from ..language.requests import request_topic
from ..store.protocol import ChatMatch, IndexedChats, TextMatch, TextRef
from .evidence import Readings, RequestWords, read_chat, typical_length
from .turn_windows import TITLE

log = logging.getLogger("parla.memory")

# Chats the first stage hands to the second, and texts per chat it rescores.
_FETCH = 40
_TEXTS_PER_CHAT = 6
# A date the request names counts for chats active up to a day around it (time zones, late nights).
_DATE_SLACK = timedelta(days=1)
# Chats listed per call while reading every title (a search by words).
_TITLE_PAGE = 500


class Thresholds(BaseModel):
    min_similarity: float
    min_score: float
    switch_score: float
    switch_margin: float
    max_candidates: int
    words_weight: float
    date_weight: float
    recency_weight: float
    half_life_days: float

    @classmethod
    def of(cls, config: MemoryConfig, embedder: Embedder) -> Thresholds:
        def own(value: float | None, default: float) -> float:
            return default if value is None else value

        return cls(
            min_similarity=own(config.search_min_similarity, embedder.calibration.min_similarity),
            min_score=own(config.search_min_match, embedder.calibration.min_match),
            switch_score=own(config.search_switch_score, embedder.calibration.switch_score),
            switch_margin=own(config.search_switch_margin, embedder.calibration.switch_margin),
            max_candidates=config.search_max_candidates,
            words_weight=own(config.search_words_weight, embedder.calibration.words_weight),
            date_weight=config.search_date_weight,
            recency_weight=config.search_recency_weight,
            half_life_days=config.search_recency_half_life_days,
        )


def rank(
    query: str,
    matches: list[ChatMatch],
    words: RequestWords,
    thresholds: Thresholds,
    now: datetime,
) -> SearchResult:
    texts = [text for m in matches for text in m.texts]
    best, text_words = words.best([t.text for t in texts])
    typical = typical_length(texts, text_words)
    date = _date_bonus(mentioned_date(query, now), matches, thresholds.date_weight)
    candidates, at = [], 0
    for m in matches:
        n = len(m.texts)
        chat = read_chat(m.texts, best[at : at + n], text_words[at : at + n])
        candidates.append(_candidate(m, chat, words, typical, date.get(m.chat_id, 0.0), thresholds, now))
        at += n
    candidates.sort(key=lambda c: (-c.score, c.chat_id))
    return _decide(query, candidates, words, thresholds)


def _candidate(
    m: ChatMatch,
    chat: Readings,
    words: RequestWords,
    typical: float,
    date: float,
    t: Thresholds,
    now: datetime,
) -> Candidate:
    word_scores = words.scores(chat.best, chat.lengths, typical)
    # a title is found by its embedding but scored by its words: a short text's cosine with a short
    # request rewards its shortness ("Japan" is nearer "Japan in May" than "Two weeks in Japan in
    # April"), not its topic
    matches = np.where(chat.title, word_scores, (1 - t.words_weight) * chat.similarity + t.words_weight * word_scores)
    i = int(np.argmax(matches))
    match, shown, kind = float(matches[i]), chat.shown[i], chat.shown[i].ref.shown_kind
    age_days = max(0.0, (now - m.last_activity_at).total_seconds() / 86400)
    recency = 0.5 ** (age_days / t.half_life_days)
    return Candidate(
        chat_id=m.chat_id,
        title=m.title,
        score=round(match + date + t.recency_weight * recency, 6),
        match=round(match, 6),
        similarity=round(float(chat.similarity[i]), 6),
        words=round(float(word_scores[i]), 6),
        date=round(date, 6),
        recency=round(recency, 6),
        last_activity_at=m.last_activity_at,
        matched_kind=kind,
        matched_range=str(chat.ranges[i]) if chat.ranges[i] and kind != "title" else None,
        matched_text=shown.text,
        matched_words=words.held(chat.best[i]),
    )


def _date_bonus(span: DateSpan | None, matches: list[ChatMatch], weight: float) -> dict[str, float]:
    """The chats active when the request says, each with its bonus: the date counts by how many of
    the chats found it sets apart (a day of one chat among thirty nearly `weight`, a year that holds
    them all nothing)."""
    if span is None or not matches:
        return {}
    then = [m.chat_id for m in matches if span.overlaps(m.created_at, m.last_activity_at, _DATE_SLACK)]
    return dict.fromkeys(then, weight * (1 - len(then) / len(matches)))


def _decide(query: str, candidates: list[Candidate], words: RequestWords, t: Thresholds) -> SearchResult:
    if not candidates:
        return SearchResult(query=query, decision="none", reason="no chat is indexed yet", candidates=[])
    top = candidates[0]
    if top.match + top.date < t.min_score:
        reason = f"the closest chat matches {top.match + top.date:.2f}, under {t.min_score:.2f}: nothing talked about"
        return SearchResult(query=query, decision="none", reason=reason, candidates=candidates)
    unsaid = [w for w in words.unknown_names() if w not in top.matched_words]
    if t.words_weight and unsaid:
        # a name is specific: a chat that never says it is not surely about it, whatever its lead
        named = ", ".join(f"'{w}'" for w in unsaid)
        if words.information_of(unsaid) >= words.information_of(top.matched_words):
            reason = f"no chat says {named}, and the closest holds less of the request: nothing talked about that"
            return SearchResult(query=query, decision="none", reason=reason, candidates=candidates)
        close = candidates[: t.max_candidates]
        reason = f"no chat says {named}: {len(close)} to ask about"
        return SearchResult(query=query, decision="ambiguous", reason=reason, candidates=close)
    lead = top.score - candidates[1].score if len(candidates) > 1 else math.inf
    if top.match + top.date >= t.switch_score and lead >= t.switch_margin:
        reason = (
            f"the top chat matches {top.match + top.date:.2f} (switch from {t.switch_score:.2f}) and leads the next by "
            f"{'all' if lead == math.inf else f'{lead:.2f}'} (from {t.switch_margin:.2f})"
        )
        return SearchResult(query=query, decision="switch", reason=reason, candidates=candidates)
    # the few best: the user hears them and says which one
    close = candidates[: t.max_candidates]
    why = (
        f"matches only {top.match + top.date:.2f} (a switch needs {t.switch_score:.2f})"
        if top.match + top.date < t.switch_score
        else f"leads the next by only {lead:.2f} (a switch needs {t.switch_margin:.2f})"
    )
    reason = f"the top chat {why}: {len(close)} to ask about"
    return SearchResult(query=query, decision="ambiguous", reason=reason, candidates=close)


class ChatSearch:
    """`serving`, when given, names the embedder whose vectors the store holds while they are being
    rebuilt for `embedder` (None when there is none, or it cannot be used here): requests are
    embedded with it, and scored with its thresholds, so search keeps its meaning meanwhile."""

    def __init__(
        self,
        store: IndexedChats,
        embedder: Embedder,
        config: MemoryConfig,
        serving: Callable[[], Embedder | None] | None = None,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.config = config
        self.thresholds = Thresholds.of(config, embedder)
        self.embed_timeout_s = config.search_embed_timeout_s
        self.words = WordTable()
        self.serving = serving

    async def search(self, request: str, limit: int = 10, now: datetime | None = None) -> SearchResult:
        request = request.strip()
        if not request:
            raise EmptyRequest()
        now = now or utcnow()
        topic = request_topic(request, now)
        # the word counts are read while the request is embedded; an error of either is its own
        counts = asyncio.create_task(self.store.word_counts(_counted(topic.words)))
        try:
            try:
                async with asyncio.timeout(self.embed_timeout_s):
                    embedder, matches = await self._matches(topic.text if topic.words else request, limit)
            except TimeoutError:
                failed: str | None = f"the request could not be embedded within {self.embed_timeout_s:g} s"
            except (ModelError, Reembedding) as e:
                failed = f"the request could not be embedded ({e})"
            else:
                failed = None
            words = RequestWords(topic.words, await counts, self.words, topic.names)
        finally:
            await cancel_and_wait(counts)
        if failed is None:
            thresholds = self.thresholds if embedder is self.embedder else Thresholds.of(self.config, embedder)
            result = rank(request, matches, words, thresholds, now)
        else:
            log.warning("search by words and titles: %s", failed, extra={"event": "search_by_words"})
            result = await self._by_words(request, words, now, failed)
        return result.model_copy(update={"candidates": result.candidates[:limit]})

    async def _matches(self, request: str, limit: int) -> tuple[Embedder, list[ChatMatch]]:
        """The request's best chats by meaning, and the embedder that read it."""
        old = self.serving() if self.serving is not None else None
        if old is not None:
            try:
                (query,) = await embed_texts(old, [request], "query")
                return old, await self.store.search(query, max(limit, _FETCH), _TEXTS_PER_CHAT)
            except EmbedderMismatch:
                pass  # the new vectors took the old ones' place meanwhile: the configured embedder's turn
        (query,) = await embed_texts(self.embedder, [request], "query")
        return self.embedder, await self.store.search(query, max(limit, _FETCH), _TEXTS_PER_CHAT)

    async def _by_words(self, request: str, words: RequestWords, now: datetime, failed: str) -> SearchResult:
        """The chats whose turns hold the request's words (the word index) or whose title does,
        ranked by the word score alone."""
        chats: dict[str, Chat] = {}
        while page := await self.store.list_chats(_TITLE_PAGE, len(chats)):
            chats.update((c.id, c) for c in page)
        texts: dict[str, list[TextMatch]] = {
            c.id: [TextMatch(TextRef(c.id, "turns", TITLE), c.title, 0.0)] for c in chats.values() if c.title
        }
        for hit in await self.store.search_words(words.words, _FETCH * _TEXTS_PER_CHAT):
            held = texts.setdefault(hit.chat_id, [])
            if hit.chat_id in chats and len(held) < _TEXTS_PER_CHAT:
                turn = TextRef(hit.chat_id, "turns", MessageRange(start=hit.seq, end=hit.seq))
                held.append(TextMatch(turn, hit.text, 0.0))
        matches = [
            ChatMatch(cid, chats[cid].title, chats[cid].created_at, chats[cid].last_activity_at, tuple(found))
            for cid, found in texts.items()
            if found and cid in chats
        ]
        by_words = self.thresholds.model_copy(update={"words_weight": 1.0})
        result = rank(request, matches, words, by_words, now)
        return result.model_copy(
            update={"by_words": failed, "reason": f"answered by words and titles ({failed}): {result.reason}"}
        )


def _counted(words: list[str]) -> list[str]:
    """The words whose counts tell how rare a request word is: each as said and with a possessive
    (the store counts "caroline's" apart from "caroline")."""
    return [form for w in words for form in (w, w + "'s")]
