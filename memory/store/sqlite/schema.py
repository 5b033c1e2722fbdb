"""Versioned schema of the SQLite store. Each entry is one migration (statements separated by
";\n", so a trigger's inner statements end with "; " and a comment or "; END"); PRAGMA user_version
records how many were applied. Append, never edit."""

MIGRATIONS: list[str] = [
    """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO meta (key, value) VALUES ('generation', '0');
CREATE TABLE chats (
    id TEXT PRIMARY KEY,
    title TEXT,
    created_at TEXT NOT NULL,
    last_activity_at TEXT NOT NULL,
    summary_text TEXT NOT NULL DEFAULT '',
    summary_embedding BLOB,
    summary_embedder TEXT,
    rolling_summary TEXT NOT NULL DEFAULT '',
    summarized_through INTEGER NOT NULL DEFAULT 0,
    compaction_version INTEGER NOT NULL DEFAULT 0,
    turn_count INTEGER NOT NULL DEFAULT 0,
    CHECK (summarized_through <= turn_count)
);
CREATE INDEX chats_by_activity ON chats (last_activity_at DESC);
CREATE TABLE turns (
    id TEXT PRIMARY KEY,
    chat_id TEXT NOT NULL REFERENCES chats (id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('user', 'model')),
    parts TEXT NOT NULL,
    thinking TEXT,
    created_at TEXT NOT NULL,
    interrupted INTEGER NOT NULL DEFAULT 0,
    source TEXT NOT NULL,
    model_variant TEXT,
    UNIQUE (chat_id, seq)
);
CREATE TABLE summaries (
    chat_id TEXT NOT NULL REFERENCES chats (id) ON DELETE CASCADE,
    level INTEGER NOT NULL CHECK (level IN (0, 1)),
    start_seq INTEGER NOT NULL,
    end_seq INTEGER NOT NULL,
    text TEXT NOT NULL,
    embedding BLOB NOT NULL,
    embedder TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (chat_id, level, start_seq, end_seq)
);
CREATE TABLE facts (
    chat_id TEXT NOT NULL REFERENCES chats (id) ON DELETE CASCADE,
    start_seq INTEGER NOT NULL,
    end_seq INTEGER NOT NULL,
    text TEXT NOT NULL,
    embedding BLOB,
    embedder TEXT,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (chat_id, start_seq, end_seq),
    CHECK ((text = '') = (embedding IS NULL))
);
CREATE TABLE pins (
    id TEXT PRIMARY KEY,
    chat_id TEXT NOT NULL REFERENCES chats (id) ON DELETE CASCADE,
    content TEXT NOT NULL CHECK (content != ''),
    importance REAL NOT NULL CHECK (importance BETWEEN 0 AND 10),
    pin_type TEXT NOT NULL CHECK (pin_type IN ('manual', 'auto', 'code', 'concept', 'system')),
    source_turn_id TEXT,
    created_at TEXT NOT NULL
);
CREATE INDEX pins_by_chat ON pins (chat_id)
""",
    # forgetting: a forgotten pin keeps its row; a forgotten fact line moves to `forgotten`.
    # title_generated: Parla made the title (so it may refresh it); a user's title is kept.
    """
ALTER TABLE pins ADD COLUMN forgotten_at TEXT;
ALTER TABLE facts ADD COLUMN forgotten TEXT NOT NULL DEFAULT '';
ALTER TABLE chats ADD COLUMN title_generated INTEGER NOT NULL DEFAULT 0
""",
    # what was said, indexed for search: windows of raw turns with the words each holds, the
    # count of windows per word (the empty word counts them all), and which chat's vectors each
    # generation changed, so an open index reloads only those chats.
    """
CREATE TABLE turn_windows (
    chat_id TEXT NOT NULL REFERENCES chats (id) ON DELETE CASCADE,
    start_seq INTEGER NOT NULL,
    end_seq INTEGER NOT NULL,
    text TEXT NOT NULL,
    words TEXT NOT NULL,
    embedding BLOB NOT NULL,
    embedder TEXT NOT NULL,
    PRIMARY KEY (chat_id, start_seq),
    CHECK (start_seq <= end_seq)
);
CREATE TABLE window_words (word TEXT PRIMARY KEY, windows INTEGER NOT NULL CHECK (windows >= 0)) WITHOUT ROWID;
CREATE TABLE vector_changes (chat_id TEXT PRIMARY KEY, generation INTEGER NOT NULL) WITHOUT ROWID;
INSERT INTO meta (key, value) VALUES ('rebuilt_generation', '0')
""",
    # importance: each turn's and each chunk summary's (0-10); existing turns are scored by the
    # rules as the file is migrated (the connection provides parla_turn_importance). A pin records
    # where in the chat its source turn is.
    """
ALTER TABLE turns ADD COLUMN importance REAL CHECK (importance BETWEEN 0 AND 10);
ALTER TABLE summaries ADD COLUMN importance REAL CHECK (importance BETWEEN 0 AND 10);
ALTER TABLE pins ADD COLUMN source_seq INTEGER;
UPDATE turns SET importance = parla_turn_importance(role, parts);
CREATE INDEX turns_by_importance ON turns (chat_id, importance DESC, seq DESC)
""",
    # recall by words: every turn's text in an FTS5 index (bm25), written by the trigger in the
    # transaction that stores the turn, and filled from the turns already stored. It keeps its own
    # copy of the text (a turn's text is inside its JSON parts, and an index keyed by the turns'
    # rowids would break when VACUUM renumbers them). Tokens as Postgres' 'simple' configuration
    # makes them: lower-cased, accents kept, no stemming.
    """
CREATE VIRTUAL TABLE turn_words USING fts5(
    body, chat_id UNINDEXED, seq UNINDEXED, tokenize = 'unicode61 remove_diacritics 0'
);
CREATE VIRTUAL TABLE turn_vocab USING fts5vocab(turn_words, 'row');
CREATE TRIGGER turn_words_insert AFTER INSERT ON turns BEGIN
    INSERT INTO turn_words (body, chat_id, seq)
    SELECT coalesce(group_concat(json_extract(p.value, '$.text'), ''), ''), new.chat_id, new.seq
    FROM json_each(new.parts) p; END;
CREATE TRIGGER turn_words_delete AFTER DELETE ON chats BEGIN
    DELETE FROM turn_words WHERE chat_id = old.id; END;
INSERT INTO turn_words (body, chat_id, seq)
SELECT (SELECT coalesce(group_concat(json_extract(p.value, '$.text'), ''), '') FROM json_each(t.parts) p),
       t.chat_id, t.seq
FROM turns t ORDER BY t.chat_id, t.seq
""",
    # the tokens the Live service reported for a model turn, as JSON
    """
ALTER TABLE turns ADD COLUMN usage TEXT
""",
    # a chat's title is searchable: it is indexed as the window before the first turn (start 0,
    # memory.retrieval.turn_windows). Whatever changes a title (a rename, a generated title) drops that
    # window in the same transaction, with its word counts, so the old title is never found; the
    # indexer embeds the new one.
    """
CREATE TRIGGER title_window_stale AFTER UPDATE OF title ON chats
WHEN old.title IS NOT new.title AND EXISTS (SELECT 1 FROM turn_windows WHERE chat_id = new.id AND start_seq = 0)
BEGIN
    UPDATE window_words SET windows = windows - 1 WHERE word = '' OR word IN (
        SELECT value FROM json_each((SELECT words FROM turn_windows WHERE chat_id = new.id AND start_seq = 0)));  -- counts
    DELETE FROM turn_windows WHERE chat_id = new.id AND start_seq = 0;  -- the old title
    UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation';  -- an open index reloads the chat
    INSERT INTO vector_changes (chat_id, generation)
    VALUES (new.id, (SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'generation'))
    ON CONFLICT (chat_id) DO UPDATE SET generation = excluded.generation; END
""",
    # the user's profile, across chats (parla.records.profile): an entry keeps its source chat's id as
    # provenance after that chat is deleted; superseded_by names the newer entry of its subject
    """
CREATE TABLE profile (
    id TEXT PRIMARY KEY,
    content TEXT NOT NULL CHECK (content != ''),
    importance REAL NOT NULL CHECK (importance BETWEEN 0 AND 10),
    subject TEXT,
    origin TEXT NOT NULL CHECK (origin IN ('remember', 'auto', 'user')),
    chat_id TEXT,
    source_turn_id TEXT,
    source_seq INTEGER,
    said_at TEXT NOT NULL,
    created_at TEXT NOT NULL,
    superseded_by TEXT,
    superseded_at TEXT,
    forgotten_at TEXT
);
CREATE INDEX profile_by_subject ON profile (subject) WHERE subject IS NOT NULL
""",
    # the vector index file beside the store (sqlite_vector_file.py): a number per chat that is
    # never reused (a deleted chat's rows are found by it), and the store's identity, so a file
    # left from another store is never taken for this one's
    """
CREATE TABLE vector_chats (number INTEGER PRIMARY KEY AUTOINCREMENT, chat_id TEXT NOT NULL UNIQUE);
INSERT INTO vector_chats (chat_id) SELECT id FROM chats ORDER BY rowid;
INSERT INTO meta (key, value) VALUES ('store_id', lower(hex(randomblob(16))))
""",
    # the web pages a model turn's answer came from (a look-up), as a JSON list of {title, uri}
    """
ALTER TABLE turns ADD COLUMN sources TEXT
""",
    # timers and reminders (parla.records.reminder): a reminder keeps its chat's id after that chat is
    # deleted (it is still said); the pending ones are read soonest first
    """
CREATE TABLE reminders (
    id TEXT PRIMARY KEY,
    text TEXT NOT NULL CHECK (text != ''),
    due_at TEXT NOT NULL,
    time_zone TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('timer', 'reminder')),
    chat_id TEXT,
    turn_id TEXT,
    device TEXT,
    state TEXT NOT NULL CHECK (state IN ('pending', 'fired', 'cancelled')),
    claimed_by TEXT,
    created_at TEXT NOT NULL,
    fired_at TEXT,
    cancelled_at TEXT
);
CREATE INDEX reminders_pending ON reminders (due_at) WHERE state = 'pending'
""",
    # chats waiting for their summaries (memory.compaction.summary_queue): due from not_before (seconds since
    # the epoch), which a worker that takes one pushes past its lease, so a worker that dies
    # leaves it due again; a deleted chat leaves the queue with it
    """
CREATE TABLE summary_queue (
    chat_id TEXT PRIMARY KEY REFERENCES chats (id) ON DELETE CASCADE,
    queued_at REAL NOT NULL,
    not_before REAL NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    last_error TEXT
);
CREATE INDEX summary_queue_due ON summary_queue (not_before, queued_at)
""",
    # vectors at half precision (sqlite_rows.VECTOR_DTYPE): the float32 ones of older files
    # converted (the connection provides parla_half_vector); the index files are built from the
    # same values rounded, so they stay as they are
    """
UPDATE chats SET summary_embedding = parla_half_vector(summary_embedding) WHERE summary_embedding IS NOT NULL;
UPDATE summaries SET embedding = parla_half_vector(embedding);
UPDATE facts SET embedding = parla_half_vector(embedding) WHERE embedding IS NOT NULL;
UPDATE turn_windows SET embedding = parla_half_vector(embedding)
""",
    # what each word of a question adds at most to a turn's bm25, and its count of turns
    # (sqlite_word_bounds.py): kept in the file so a new process need not find them again. A
    # deleted chat takes turns out of the word index, after which a new turn may take a removed
    # one's rowid: every figure is dropped with it. After the half-precision conversion, not before:
    # a file already converted would have that conversion run again on its half-precision vectors,
    # and never get this table. IF NOT EXISTS: a test rewinds a file to before that conversion.
    """
CREATE TABLE IF NOT EXISTS word_bounds (
    word TEXT PRIMARY KEY,
    turns INTEGER NOT NULL,
    through INTEGER NOT NULL,
    impact REAL,
    impact_avglen REAL,
    impact_through INTEGER
) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS word_bounds_forget AFTER DELETE ON chats BEGIN
    DELETE FROM word_bounds; END
""",
    # a reminder counts as said once its saying finished (parla.records.reminder): a fired one not marked
    # said was cut off, and the device that claimed it says it again. Those fired before this were
    # said as far as anyone knows: they count as said when they were claimed.
    """
ALTER TABLE reminders ADD COLUMN said_at TEXT;
UPDATE reminders SET said_at = fired_at WHERE state = 'fired';
CREATE INDEX reminders_unsaid ON reminders (due_at) WHERE state = 'fired' AND said_at IS NULL
""",
]
