-- Kea's store: SQLite is the source of truth; the usearch file is derived.
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS documents (
    id           INTEGER PRIMARY KEY,
    path         TEXT NOT NULL UNIQUE,      -- relative to the knowledge folder, '/'-separated
    kind         TEXT NOT NULL,
    size         INTEGER NOT NULL,
    mtime_ns     INTEGER NOT NULL,
    content_hash TEXT,                      -- NULL until extracted successfully
    status       TEXT NOT NULL,             -- 'indexed' | 'error'
    error        TEXT,
    title        TEXT,
    front_matter TEXT NOT NULL DEFAULT '{}',
    chunk_count  INTEGER NOT NULL DEFAULT 0,
    updated_at   INTEGER NOT NULL
);

-- The documents labels come from (most have no front matter), found without
-- reading the others.
CREATE INDEX IF NOT EXISTS documents_with_front_matter ON documents(id) WHERE front_matter <> '{}';

-- AUTOINCREMENT: a chunk id is a vector key and must never be reused.
CREATE TABLE IF NOT EXISTS chunks (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    doc_id       INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    chunk_index  INTEGER NOT NULL,
    total_chunks INTEGER NOT NULL,
    heading_path TEXT NOT NULL,
    page         INTEGER,
    byte_start   INTEGER NOT NULL,
    byte_end     INTEGER NOT NULL,
    text         TEXT NOT NULL,
    hash         TEXT NOT NULL,             -- blake3 of the embedded text
    embedding    BLOB NOT NULL              -- little-endian f32 x dim
);
CREATE INDEX IF NOT EXISTS chunks_doc ON chunks(doc_id);
CREATE INDEX IF NOT EXISTS chunks_hash ON chunks(hash);

-- The chunks whose text is Chinese (language::Language::of_text), so a search
-- tells a candidate's language without reading its row. Written by store
-- code with each chunk; a deleted chunk's row goes with it.
CREATE TABLE IF NOT EXISTS chinese_chunks (id INTEGER PRIMARY KEY);
CREATE TRIGGER IF NOT EXISTS chinese_chunks_follow AFTER DELETE ON chunks BEGIN
    DELETE FROM chinese_chunks WHERE id = old.id;
END;

-- Full-text index over segmented words (see segment.rs): heading path and
-- text, jieba-split for Chinese. Rows are written and deleted by store code.
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    tokens, content='', contentless_delete=1, tokenize='unicode61 remove_diacritics 2'
);

-- Conversations and their messages (with citations and the route taken).
CREATE TABLE IF NOT EXISTS conversations (
    id         INTEGER PRIMARY KEY,
    title      TEXT NOT NULL,
    subject    TEXT,                        -- the last thing talked about (e.g. an identified species)
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS messages (
    id              INTEGER PRIMARY KEY,
    conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    role            TEXT NOT NULL,          -- 'user' | 'assistant'
    content         TEXT NOT NULL,
    citations       TEXT NOT NULL DEFAULT '[]',
    route           TEXT,
    created_at      INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS messages_conversation ON messages(conversation_id, id);

-- What an answer showed besides its text and citations (its outcome, notice,
-- related passages and unsupported sentences, as JSON), so a reopened
-- conversation looks as it did. Added in schema 4; not in a shared copy.
CREATE TABLE IF NOT EXISTS answers_shown (
    message_id INTEGER PRIMARY KEY REFERENCES messages(id) ON DELETE CASCADE,
    shown      TEXT NOT NULL
);
