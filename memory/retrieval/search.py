"""Chat search by meaning: which chat does a spoken request mean?

Two stages. First the request is embedded as a query and matched against every embedded text of
every chat (windows of what was said, the chat's title and description, chunk and meta summaries,
fact blocks); the store returns the best chats, each with its few most similar texts. Then each of
those texts is scored again word by word: every content word of the request is compared with the
text's words (static word vectors, so "painted" is near "painting" and a name is near itself),
each request word weighted by how rare it is in the user's own windows (a word in every chat,
like the user's or a friend's name, counts little; a rare one counts a lot). A text's match is
the mean of its similarity and that word score (a title's is its word score alone); a chat
counts with its best text.

The chat's score adds a bonus when the request names a date the chat was active on ("the chat
from yesterday", "on 8 May, 2023") and a small recency bonus that halves every
`search_recency_half_life_days`. The decision:
- `none`: no chat's match reaches `min_score` (nothing the user talked about is that close);
- `switch`: the top chat's match reaches `switch_score` and its score leads the next one by at
  least `switch_margin`;
- `ambiguous`: otherwise, with the few candidates close to the top for the model to ask about.
No keyword rule takes part: every comparison is between vectors; exact words only weigh more
because the same word has the same vector.

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
import functools
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
from ..language.text import FRAMING, STOPWORDS, content_words, distinct_content_words
from ..store.protocol import ChatMatch, IndexedChats, TextMatch, TextRef, WordCounts
from .turn_windows import TITLE

log = logging.getLogger("parla.memory")

# Chats the first stage hands to the second, and texts per chat it rescores.
_FETCH = 40
_TEXTS_PER_CHAT = 6
# A date the request names counts for chats active up to a day around it (time zones, late nights).
_DATE_SLACK = timedelta(days=1)
# A request word "matched" in the explanation: the text holds it or a word almost the same.
_MATCHED = 0.85
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


class RequestWords:
    """A request's content words, their vectors and their weights from the user's word counts."""

    def __init__(self, words: list[str], counts: WordCounts, table: WordTable) -> None:
        self.words = words
        self.table = table
        self.vectors = table.vectors(table.ids(words))
        if not words:
            self.weights = np.zeros(0)
            return
        if counts.windows:
            # +1 and +0.5 keep a word in no window finite and a word in every window near zero
            idf = [max(0.0, math.log((counts.windows + 1) / (counts.counts.get(w, 0) + 0.5))) for w in words]
        else:
            idf = [1.0] * len(words)  # nothing indexed yet: every word alike
        total = sum(idf)
        self.weights = np.asarray([w / total for w in idf] if total else [1 / len(words)] * len(words))

    def score(self, texts: list[str]) -> list[tuple[float, list[str]]]:
        """How well each text holds the request's words (weighted mean of each word's best
        similarity to one of the text's words), and the request words it holds. The distinct
        words of all texts are compared with the request's in one product."""
        if not self.words or not texts:
            return [(0.0, []) for _ in texts]
        per_text = [_words_of(t) for t in texts]
        lengths = np.fromiter((len(ws) for ws in per_text), dtype=np.int64, count=len(per_text))
        flat = self.table.ids([w for ws in per_text for w in ws])
        self.vectors = self.table.vectors(self.table.ids(self.words))  # the table may have started again
        distinct, where = np.unique(flat, return_inverse=True)
        sims = np.clip(self.table.vectors(distinct) @ self.vectors.T, 0.0, 1.0)
        # every text's words one after another, then one row of zeros for the texts without words
        rows = np.vstack([sims[where], np.zeros((1, len(self.words)), dtype=sims.dtype)])
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        best = np.maximum.reduceat(rows, np.where(lengths > 0, starts, len(flat)), axis=0)
        best[lengths == 0] = 0.0
        scores = best @ self.weights
        held = best >= _MATCHED
        return [
            (float(scores[i]), [w for w, h in zip(self.words, held[i], strict=True) if h]) for i in range(len(texts))
        ]


@functools.lru_cache(maxsize=16384)
def _words_of(text: str) -> tuple[str, ...]:
    """A stored text's words; stored texts come back search after search, so they are kept."""
    return tuple(distinct_content_words(text))


def request_words(request: str) -> list[str]:
    """The words that say what the request is about: not stop words, not the words that frame a
    request ("switch to the chat where we talked about")."""
    return list(dict.fromkeys(w for w in content_words(request) if w not in FRAMING and w not in STOPWORDS))


def rank(
    query: str,
    matches: list[ChatMatch],
    words: RequestWords,
    thresholds: Thresholds,
    now: datetime,
) -> SearchResult:
    span = mentioned_date(query, now)
    scores = iter(words.score([text.text for m in matches for text in m.texts]))
    candidates = [
        _candidate(m, [next(scores) for _ in m.texts], thresholds.words_weight, span, thresholds, now) for m in matches
    ]
    candidates.sort(key=lambda c: (-c.score, c.chat_id))
    return _decide(query, candidates, thresholds)


def _candidate(
    m: ChatMatch,
    word_scores: list[tuple[float, list[str]]],
    words_weight: float,
    span: DateSpan | None,
    t: Thresholds,
    now: datetime,
) -> Candidate:
    best: tuple[float, TextMatch, float, list[str]] | None = None
    for text, (word_score, held) in zip(m.texts, word_scores, strict=True):
        match = (1 - words_weight) * text.similarity + words_weight * word_score
        if text.ref.shown_kind == "title":
            # a title is found by its embedding but scored by its words: a short text's cosine with
            # a short request rewards its shortness ("Japan" is nearer "Japan in May" than "Two
            # weeks in Japan in April"), not its topic
            match = word_score
        if best is None or match > best[0]:
            best = (match, text, word_score, held)
    assert best is not None
    match, text, word_score, held = best
    date = 0.0
    if span is not None and span.overlaps(m.created_at, m.last_activity_at, _DATE_SLACK):
        date = t.date_weight if span.one_day else t.date_weight / 2
    age_days = max(0.0, (now - m.last_activity_at).total_seconds() / 86400)
    recency = 0.5 ** (age_days / t.half_life_days)
    return Candidate(
        chat_id=m.chat_id,
        title=m.title,
        score=round(match + date + t.recency_weight * recency, 6),
        match=round(match, 6),
        similarity=round(text.similarity, 6),
        words=round(word_score, 6),
        date=round(date, 6),
        recency=round(recency, 6),
        last_activity_at=m.last_activity_at,
        matched_kind=text.ref.shown_kind,
        matched_range=str(text.ref.range) if text.ref.range and text.ref.shown_kind != "title" else None,
        matched_text=text.text,
        matched_words=held,
    )


def _decide(query: str, candidates: list[Candidate], t: Thresholds) -> SearchResult:
    if not candidates:
        return SearchResult(query=query, decision="none", reason="no chat is indexed yet", candidates=[])
    top = candidates[0]
    if top.match + top.date < t.min_score:
        reason = f"the closest chat matches {top.match + top.date:.2f}, under {t.min_score:.2f}: nothing talked about"
        return SearchResult(query=query, decision="none", reason=reason, candidates=candidates)
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
        wanted = request_words(request)
        now = now or utcnow()
        # the word counts are read while the request is embedded; an error of either is its own
        counts = asyncio.create_task(self.store.word_counts(wanted))
        try:
            try:
                async with asyncio.timeout(self.embed_timeout_s):
                    embedder, matches = await self._matches(request, limit)
            except TimeoutError:
                failed: str | None = f"the request could not be embedded within {self.embed_timeout_s:g} s"
            except (ModelError, Reembedding) as e:
                failed = f"the request could not be embedded ({e})"
            else:
                failed = None
            words = RequestWords(wanted, await counts, self.words)
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
