"""What was said, indexed for search: small overlapping windows of a chat's raw turns.

A request to switch chats is usually about one exchange ("the chat where we talked about the
sunrise painting"), which a chat's summaries dilute among everything else it covered. So every run
of `search_window_turns` consecutive turns (stride one turn, so each exchange is whole in some
window) is embedded with its plain text beside the summaries and facts.

The chat's title is indexed the same way, as the window before the first turn (start 0): a title
is often the best description of a chat ("Gift ideas for Mom's 60th birthday"), so it is embedded
with its plain text and its words are counted like every window's, in both stores; it is embedded
again when the title changes (a rename, a generated title).

Windows are keyed by their first turn. The last windows of a chat are short until the turns after
them arrive; the indexer re-embeds those when they grow, and leaves complete windows alone, so
indexing after every stored turn costs the new windows only. Each window also keeps its distinct
content words: the store counts in how many windows each word occurs, per user, so a request's
words can be weighted by how rare they are in the user's own chats.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from parla.records.chat import Chat
from parla.records.embedding import Embedder, embed_texts
from parla.records.turn import MessageRange, Turn

from ..errors import ModelError
from ..store.protocol import EmbeddedWindow, IndexedChats, SearchIndex

log = logging.getLogger("parla.memory")

# Windows embedded per call, so a long imported chat is indexed in bounded requests.
_BATCH = 100
# Chats listed per call while indexing every chat.
_CHAT_PAGE = 500
# Where a chat's title is indexed: before its first turn.
TITLE = MessageRange(start=0, end=0)


@dataclass(frozen=True)
class TurnWindow:
    range: MessageRange
    text: str


def turn_windows(turns: Sequence[Turn], size: int, first: int) -> list[TurnWindow]:
    """The windows starting at `first` or later over `turns` (consecutive, in order, covering
    `first` onward). A window is `size` turns; only a chat shorter than that has a shorter one (its
    first and only window). Turns without text (a tool call, an empty interrupted reply) add
    nothing to a window's text."""
    by_seq = [t for t in turns if t.seq >= first]
    out = []
    for i, turn in enumerate(by_seq):
        window = by_seq[i : i + size]
        if len(window) < size and turn.seq != 1:
            break  # a shorter copy of the end of the window before it
        text = "\n".join(t.text for t in window if t.text.strip())
        if text:
            out.append(TurnWindow(MessageRange(start=turn.seq, end=window[-1].seq), text))
        if len(window) < size:
            break
    return out


class WindowIndexer:
    """Brings a chat's window index up to date with its turns. Idempotent: a window is upserted
    by its first turn, so a run repeated after a failure or a crash changes nothing."""

    def __init__(self, store: IndexedChats, embedder: Embedder, size: int) -> None:
        self.store = store
        self.embedder = embedder
        self.size = size

    async def index(self, chat_id: str, chat: Chat | None = None) -> int:
        """Embed and store the chat's title if it changed and its missing or grown windows; how
        many were written. `chat`: the chat as the caller just read it."""
        written = await index_title(self.store, self.embedder, chat or await self.store.get_chat(chat_id))
        first = await self.store.window_frontier(chat_id, self.size)
        turns = await self.store.load_turns(chat_id, first)
        windows = turn_windows(turns, self.size, first)
        for start in range(0, len(windows), _BATCH):
            batch = windows[start : start + _BATCH]
            embedded = await embed_texts(self.embedder, [w.text for w in batch])
            await self.store.upsert_windows(
                chat_id, [EmbeddedWindow(w.range, e) for w, e in zip(batch, embedded, strict=True)]
            )
        return written + len(windows)

    async def index_every_chat(self, on_progress: Callable[[int, int], None] | None = None) -> int:
        """Index the missing windows of every chat (a store from before windows were indexed,
        or after a re-embedding); `on_progress(done, chats)` after each chat. Windows written."""
        chats: list[Chat] = []
        while page := await self.store.list_chats(limit=_CHAT_PAGE, offset=len(chats)):
            chats.extend(page)
        written = 0
        for done, chat in enumerate(chats, start=1):
            written += await self.index(chat.id)
            if on_progress is not None:
                on_progress(done, len(chats))
        return written


async def index_title(store: SearchIndex, embedder: Embedder, chat: Chat) -> int:
    """Embed the chat's title as its searchable window 0 unless that already holds it; 1 if written."""
    if not chat.title or await store.window_text(chat.id, TITLE.start) == chat.title:
        return 0
    (embedded,) = await embed_texts(embedder, [chat.title])
    await store.upsert_windows(chat.id, [EmbeddedWindow(TITLE, embedded)])
    return 1


async def rename_chat(store: IndexedChats, embedder: Embedder, chat_id: str, title: str) -> Chat:
    """Give the chat a title of the user's, searchable at once. The title is stored first: if it
    cannot be embedded now (the embedder is unreachable) the next compaction of the chat does it."""
    chat = await store.rename_chat(chat_id, title)
    try:
        await index_title(store, embedder, chat)
    except ModelError as e:
        log.warning("the new title of chat %s is searchable after its next compaction: %s", chat_id, e)
    return chat
