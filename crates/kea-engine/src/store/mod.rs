//! The SQLite store: documents, chunks (text, metadata, hash, embedding), an
//! FTS5 index over chunk text, and settings. Every change to the chunks is
//! one transaction that also bumps the `generation` counter, so a crash at
//! any point leaves either the old or the new state of each document, and a
//! saved vector index can be checked against the store.

use std::collections::HashMap;
use std::path::Path;

use rusqlite::{params, Connection, OptionalExtension, Transaction};

mod chat;
mod full_text;
#[cfg(test)]
mod full_text_differential;
mod mirror;
mod term_index;
mod tokenizer;
mod untrusted;

pub use chat::{Conversation, NewMessage, StoredMessage};
pub use mirror::MirroredChunk;

use crate::error::{Error, Result};
use crate::extract::DocKind;
use crate::language::Language;
use crate::segment;
use crate::vectors::{from_blob, to_blob};

const SCHEMA_VERSION: &str = "4";

/// A key of the store's `meta` table: every key the engine reads or writes
/// is one of these.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MetaKey {
    SchemaVersion,
    /// Bumped by every transaction that changes chunks.
    Generation,
    /// The embedding model the stored vectors come from, and their dimension.
    ModelId,
    Dim,
    /// The embedding model's measured milliseconds per chunk (written by a sync).
    EmbedMsPerChunk,
    /// How documents were chunked: another format re-reads them.
    ChunkFormat,
    /// `chinese_chunks` lists every Chinese chunk (set once it was filled
    /// for a store older than the table).
    ChineseChunks,
    /// What the last sync of the whole folder left out, and why (JSON).
    Skipped,
    /// A team mirror: the state of the last pull.
    TeamPulled,
    /// A team mirror: the version pulled of one source (by its tag).
    TeamVersion(String),
}

impl MetaKey {
    pub fn name(&self) -> std::borrow::Cow<'static, str> {
        let name = match self {
            MetaKey::SchemaVersion => "schema_version",
            MetaKey::Generation => "generation",
            MetaKey::ModelId => "model_id",
            MetaKey::Dim => "dim",
            MetaKey::EmbedMsPerChunk => "embed_ms_per_chunk",
            MetaKey::ChunkFormat => "chunk_format",
            MetaKey::ChineseChunks => "chinese_chunks",
            MetaKey::Skipped => "skipped",
            MetaKey::TeamPulled => "team.pulled",
            MetaKey::TeamVersion(tag) => return format!("team.version.{tag}").into(),
        };
        name.into()
    }
}

/// A document's indexing state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DocStatus {
    Indexed,
    Error,
}

impl DocStatus {
    fn as_str(self) -> &'static str {
        match self {
            DocStatus::Indexed => "indexed",
            DocStatus::Error => "error",
        }
    }
}

/// How the `kind` column names a passage mirrored from a team store.
pub const MIRRORED_KIND: &str = "team";

/// A document row.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct DocRecord {
    pub id: i64,
    pub path: String,
    /// `None`: passages mirrored from a team store (no file of this machine).
    pub kind: Option<DocKind>,
    pub size: u64,
    pub mtime_ns: i64,
    pub content_hash: Option<String>,
    pub status: DocStatus,
    pub error: Option<String>,
    pub title: Option<String>,
    pub front_matter: serde_json::Value,
    pub chunk_count: usize,
    /// When the document was last read (Unix seconds).
    pub indexed_at: i64,
}

impl DocRecord {
    /// The document's web address, if it has one (see [`crate::web::web_link`]).
    pub fn link(&self) -> Option<String> {
        crate::web::web_link(&serde::Deserialize::deserialize(&self.front_matter).ok()?)
    }
}

/// File facts shared by every kind of document change.
#[derive(Debug, Clone)]
pub struct FileFacts {
    pub path: String,
    /// `None`: passages mirrored from a team store (no file of this machine).
    pub kind: Option<DocKind>,
    pub size: u64,
    pub mtime_ns: i64,
}

/// A chunk ready to store, with its vector.
#[derive(Debug, Clone)]
pub struct NewChunk {
    pub index: usize,
    pub heading_path: String,
    pub page: Option<u32>,
    pub byte_start: usize,
    pub byte_end: usize,
    pub text: String,
    /// Names of the document (front matter) indexed for full-text search
    /// with this chunk.
    pub names: String,
    pub hash: String,
    pub embedding: Vec<f32>,
}

/// One change to apply; a batch of them is one transaction.
#[derive(Debug, Clone)]
pub enum DocChange {
    /// New content: replaces all chunks of the document.
    Replace { file: FileFacts, content_hash: String, title: Option<String>, front_matter: String, chunks: Vec<NewChunk> },
    /// Same content, new size/mtime (e.g. touched): no chunk changes.
    Touch { file: FileFacts },
    /// The file could not be indexed; its old chunks are dropped.
    Failed { file: FileFacts, message: String },
    /// The file is gone.
    Remove { path: String },
}

pub use crate::vectors::{AddedVector, ChunkRow, VectorDelta};

/// The SQLite store.
pub struct Store {
    conn: Connection,
    /// The full-text postings held in memory (see `full_text`).
    terms: std::sync::Arc<full_text::HeldTerms>,
    /// The store's file (`None`: in memory), which a background read opens.
    file: Option<full_text::StoreFile>,
    /// FTS5's tokenizer, for queries and the changes the postings follow.
    tokenizer: tokenizer::Fts5Tokenizer,
}

impl Store {
    /// Opens (creating if needed) the store at `path`.
    pub fn open(path: &Path) -> Result<Store> {
        let conn = Connection::open(path)?;
        Self::init(conn, Some(path.to_path_buf()))
    }

    /// A consistent copy of the store at `dest` to share: its documents,
    /// chunks, full text and vectors, without conversations or team state.
    /// Without `answers_shown` either, so its schema is the one a Kea of
    /// schema 3 checks an import against and it opens there too.
    pub fn export_copy(&self, dest: &Path) -> Result<()> {
        self.conn.execute("VACUUM INTO ?1", [dest.to_string_lossy()])?;
        let copy = Connection::open(dest)?;
        copy.execute_batch(
            "DROP TABLE answers_shown; DELETE FROM messages; DELETE FROM conversations;
             DELETE FROM meta WHERE key LIKE 'team.%' OR key = 'skipped'; VACUUM;",
        )?;
        Ok(())
    }

    /// The store at `path` for reading only, beside the process that writes
    /// it: its schema must be this Kea's (nothing is created or migrated)
    /// and SQLite refuses every write on this connection.
    pub fn open_read_only(path: &Path) -> Result<Store> {
        let conn = Connection::open(path)?;
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
        conn.execute_batch(term_index::INSTANCES)?;
        conn.pragma_update(None, "query_only", "ON")?;
        let store = Store { conn, terms: Default::default(), file: Some(full_text::StoreFile::new(path)), tokenizer: Default::default() };
        match store.meta(&MetaKey::SchemaVersion)?.as_deref() {
            Some(SCHEMA_VERSION) => Ok(store),
            other => Err(Error::InvalidInput(format!(
                "the index in {} is at schema version {}, this Kea reads {SCHEMA_VERSION}: open it once in the app or with `kea index`",
                path.display(),
                other.unwrap_or("none")
            ))),
        }
    }

    /// An in-memory store, for tests.
    pub fn open_in_memory() -> Result<Store> {
        Self::init(Connection::open_in_memory()?, None)
    }

    fn init(conn: Connection, path: Option<std::path::PathBuf>) -> Result<Store> {
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        let mut conn = conn;
        // A write waits on the busy timeout for another writer from its
        // first statement on, instead of failing when a read upgrades to a write.
        conn.set_transaction_behavior(rusqlite::TransactionBehavior::Immediate);
        let mut store = Store { conn, terms: Default::default(), file: path.as_deref().map(full_text::StoreFile::new), tokenizer: Default::default() };
        let version = store.conn.query_row("SELECT value FROM meta WHERE key = ?1", [MetaKey::SchemaVersion.name()], |r| r.get::<_, String>(0)).optional();
        match version.ok().flatten().as_deref() {
            // v1: raw-text FTS; v2: segmented but unstemmed.
            Some("1") | Some("2") => store.rebuild_full_text()?,
            // v3: no `answers_shown` (the schema's `IF NOT EXISTS` adds it).
            Some("3") | Some(SCHEMA_VERSION) | None => store.conn.execute_batch(include_str!("schema.sql"))?,
            Some(v) => return Err(Error::InvalidInput(format!("store schema version {v} is newer than this Kea understands"))),
        }
        store.set_meta(&MetaKey::SchemaVersion, SCHEMA_VERSION)?;
        store.conn.execute_batch(term_index::INSTANCES)?;
        if store.meta(&MetaKey::ChineseChunks)?.is_none() {
            store.fill_chinese_chunks()?;
        }
        Ok(store)
    }

    /// Lists the Chinese chunks of a store written before `chinese_chunks`
    /// existed (once; a new store has none to list).
    fn fill_chinese_chunks(&mut self) -> Result<()> {
        let tx = self.conn.transaction()?;
        {
            let mut select = tx.prepare("SELECT id, text FROM chunks")?;
            let mut rows = select.query([])?;
            while let Some(row) = rows.next()? {
                record_language(&tx, row.get(0)?, &row.get::<_, String>(1)?)?;
            }
        }
        put_meta(&tx, &MetaKey::ChineseChunks, "1")?;
        tx.commit()?;
        Ok(())
    }

    /// The language of each chunk of `ids` (in that order) from
    /// `chinese_chunks`, without reading the chunks.
    pub fn languages_by_ids(&self, ids: &[u64]) -> Result<Vec<Language>> {
        let mut stmt = self.conn.prepare_cached("SELECT EXISTS(SELECT 1 FROM chinese_chunks WHERE id = ?1)")?;
        ids.iter().map(|&id| Ok(if stmt.query_row([id as i64], |r| r.get::<_, bool>(0))? { Language::Chinese } else { Language::English })).collect()
    }

    /// Rebuilds the full-text index from chunk text with the current
    /// segmentation (older stores tokenised differently).
    fn rebuild_full_text(&mut self) -> Result<()> {
        let tx = self.conn.transaction()?;
        tx.execute_batch("DROP TRIGGER IF EXISTS chunks_ai; DROP TRIGGER IF EXISTS chunks_ad; DROP TABLE IF EXISTS chunks_fts;")?;
        tx.execute_batch(include_str!("schema.sql"))?;
        {
            let mut select = tx.prepare("SELECT id, heading_path, text FROM chunks")?;
            let mut insert = tx.prepare("INSERT INTO chunks_fts(rowid, tokens) VALUES (?1, ?2)")?;
            let mut rows = select.query([])?;
            while let Some(row) = rows.next()? {
                let (id, path, text): (i64, String, String) = (row.get(0)?, row.get(1)?, row.get(2)?);
                insert.execute(params![id, fts_tokens(&path, "", &text)])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    pub fn meta(&self, key: &MetaKey) -> Result<Option<String>> {
        Ok(self.conn.query_row("SELECT value FROM meta WHERE key = ?1", [key.name()], |r| r.get(0)).optional()?)
    }

    pub fn set_meta(&self, key: &MetaKey, value: &str) -> Result<()> {
        put_meta(&self.conn, key, value)
    }

    /// Bumped by every transaction that changes chunks.
    pub fn generation(&self) -> Result<i64> {
        generation_in(&self.conn)
    }

    /// The embedding model the stored vectors come from, and its dimension.
    pub fn model(&self) -> Result<Option<(String, usize)>> {
        let id = self.meta(&MetaKey::ModelId)?;
        let dim = self.meta(&MetaKey::Dim)?.and_then(|d| d.parse().ok());
        Ok(id.zip(dim))
    }

    /// Marks every document to be read again on the next sync (how chunks
    /// are built changed); chunks and vectors stay until each is replaced,
    /// and unchanged chunk text reuses its stored vector.
    pub fn reread_all_documents(&self) -> Result<()> {
        self.conn.execute("UPDATE documents SET content_hash = NULL WHERE status = 'indexed'", [])?;
        Ok(())
    }

    /// Records a new embedding model: all vectors are dropped (documents are
    /// kept but marked for re-extraction), so dimensions never mix.
    pub fn switch_model(&mut self, model_id: &str, dim: usize) -> Result<()> {
        let tx = self.conn.transaction()?;
        tx.execute("DELETE FROM chunks", [])?;
        tx.execute("DELETE FROM chunks_fts", [])?;
        tx.execute("UPDATE documents SET content_hash = NULL, chunk_count = 0", [])?;
        put_meta(&tx, &MetaKey::ModelId, model_id)?;
        put_meta(&tx, &MetaKey::Dim, &dim.to_string())?;
        bump_generation(&tx)?;
        tx.commit()?;
        Ok(())
    }

    pub fn documents(&self) -> Result<Vec<DocRecord>> {
        self.documents_where("1", &[])
    }

    /// How many documents there are, and `limit` of them from the
    /// `offset`-th in path order (a page of a long list).
    pub fn documents_page(&self, offset: usize, limit: usize) -> Result<(usize, Vec<DocRecord>)> {
        let page = self.documents_where(&format!("path IN (SELECT path FROM documents ORDER BY path LIMIT {limit} OFFSET {offset})"), &[])?;
        Ok((self.document_count()?, page))
    }

    /// The documents with front matter (where labels come from), through
    /// their partial index: in a large folder most documents have none.
    pub fn documents_with_front_matter(&self) -> Result<Vec<DocRecord>> {
        self.documents_where("front_matter <> '{}'", &[])
    }

    /// The titles (else paths) of about `n` documents spread evenly over
    /// the index, for shares that need no complete count.
    pub fn title_sample(&self, n: usize) -> Result<Vec<String>> {
        let last: i64 = self.conn.query_row("SELECT COALESCE(MAX(id), 0) FROM documents", [], |r| r.get(0))?;
        let step = (last / n.max(1) as i64).max(1);
        let mut stmt = self.conn.prepare_cached(
            "WITH RECURSIVE picked(id) AS (SELECT 1 UNION ALL SELECT id + ?2 FROM picked WHERE id + ?2 <= ?1)
             SELECT COALESCE(d.title, d.path) FROM picked JOIN documents d ON d.id = picked.id",
        )?;
        let titles = stmt.query_map(params![last, step], |r| r.get(0))?.collect::<rusqlite::Result<Vec<String>>>()?;
        Ok(titles)
    }

    pub fn document_count(&self) -> Result<usize> {
        Ok(self.conn.query_row("SELECT COUNT(*) FROM documents", [], |r| r.get::<_, i64>(0))? as usize)
    }

    /// How many documents the index holds, and those in error with their
    /// messages (a sync's summary, without reading every row).
    pub fn document_errors(&self) -> Result<(usize, Vec<(String, String)>)> {
        let count: i64 = self.conn.query_row("SELECT count(*) FROM documents", [], |r| r.get(0))?;
        let mut stmt = self.conn.prepare("SELECT path, error FROM documents WHERE error IS NOT NULL ORDER BY path")?;
        let errors = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect::<rusqlite::Result<_>>()?;
        Ok((count as usize, errors))
    }

    /// The documents at `key` or below it (a folder), for a sync of some paths.
    pub fn documents_under(&self, key: &str) -> Result<Vec<DocRecord>> {
        // Keys below `a/b` sort from `a/b/` up to `a/b0` ('0' follows '/').
        self.documents_where("path = ?1 OR (path >= ?1 || '/' AND path < ?1 || '0')", &[key])
    }

    /// One document's record, by its key.
    pub fn document(&self, key: &str) -> Result<Option<DocRecord>> {
        Ok(self.documents_where("path = ?1", &[key])?.pop())
    }

    /// The documents whose source is web address `url` (kept pages, saved pages, clippings).
    pub fn documents_saved_from(&self, url: &str) -> Result<Vec<String>> {
        let mut stmt = self.conn.prepare_cached("SELECT path FROM documents WHERE json_extract(front_matter, '$.source') = ?1 ORDER BY path")?;
        let paths = stmt.query_map([url], |r| r.get::<_, String>(0))?.collect::<rusqlite::Result<_>>()?;
        Ok(paths)
    }

    /// A document's title, by its key (`None`: not indexed, or untitled).
    pub fn document_title(&self, path: &str) -> Result<Option<String>> {
        let mut stmt = self.conn.prepare_cached("SELECT title FROM documents WHERE path = ?1")?;
        Ok(stmt.query_row([path], |r| r.get::<_, Option<String>>(0)).optional()?.flatten())
    }

    fn documents_where(&self, condition: &str, params: &[&str]) -> Result<Vec<DocRecord>> {
        let mut stmt = self.conn.prepare(&format!(
            "SELECT id, path, kind, size, mtime_ns, content_hash, status, error, title, front_matter, chunk_count, updated_at
             FROM documents WHERE {condition} ORDER BY path"
        ))?;
        let rows = stmt.query_map(rusqlite::params_from_iter(params), |r| {
            let status: String = r.get(6)?;
            let front_matter: String = r.get(9)?;
            Ok(DocRecord {
                id: r.get(0)?,
                path: r.get(1)?,
                kind: DocKind::parse(&r.get::<_, String>(2)?),
                size: r.get::<_, i64>(3)? as u64,
                mtime_ns: r.get(4)?,
                content_hash: r.get(5)?,
                status: if status == "error" { DocStatus::Error } else { DocStatus::Indexed },
                error: r.get(7)?,
                title: r.get(8)?,
                front_matter: serde_json::from_str(&front_matter).unwrap_or_default(),
                chunk_count: r.get::<_, i64>(10)? as usize,
                indexed_at: r.get(11)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Makes the next sync read `path` again (its mtime no longer matches);
    /// false when no such document is stored.
    pub fn mark_stale(&self, path: &str) -> Result<bool> {
        Ok(self.conn.execute("UPDATE documents SET mtime_ns = -1 WHERE path = ?1", [path])? > 0)
    }

    /// Stored vectors for the given chunk hashes (any document), for reuse.
    pub fn embeddings_for_hashes(&self, hashes: &[&str]) -> Result<HashMap<String, Vec<f32>>> {
        let mut stmt = self.conn.prepare_cached("SELECT embedding FROM chunks WHERE hash = ?1 LIMIT 1")?;
        let mut found = HashMap::new();
        for &hash in hashes {
            if found.contains_key(hash) {
                continue;
            }
            if let Some(blob) = stmt.query_row([hash], |r| r.get::<_, Vec<u8>>(0)).optional()? {
                found.insert(hash.to_string(), from_blob(&blob));
            }
        }
        Ok(found)
    }

    /// Applies a batch of changes in one transaction.
    pub fn apply(&mut self, changes: &[DocChange]) -> Result<VectorDelta> {
        self.apply_then(changes, |_| Ok(()))
    }

    /// Applies `changes` in one transaction and runs `before_commit` on the
    /// delta before committing: when it fails, nothing is committed (a
    /// shared vector index is written this way, so a lost server leaves
    /// the store as it was).
    pub fn apply_then(&mut self, changes: &[DocChange], before_commit: impl FnOnce(&VectorDelta) -> Result<()>) -> Result<VectorDelta> {
        let tx = self.conn.transaction()?;
        let before = generation_in(&tx)?;
        let delta = apply_changes(&tx, changes)?;
        before_commit(&delta)?;
        let after = generation_in(&tx)?;
        // Tokens to follow the change with; without them (never expected)
        // the postings are read again rather than the change refused.
        let added_tokens = match self.terms.held_at(before) {
            true => self.tokenizer.tokens(&delta.added.iter().map(|a| a.tokens.as_str()).collect::<Vec<_>>()).ok(),
            false => None,
        };
        self.terms.commit_followed(tx, (before, after), &delta, added_tokens)?;
        Ok(delta)
    }

    /// About `n` chunk texts spread evenly over the index, and the
    /// characters of all chunks (for sampling what the folder is written in).
    pub fn sample_texts(&self, n: usize) -> Result<(Vec<String>, u64)> {
        let (count, chars): (i64, i64) =
            self.conn.query_row("SELECT COUNT(*), COALESCE(SUM(LENGTH(text)), 0) FROM chunks", [], |r| Ok((r.get(0)?, r.get(1)?)))?;
        let step = (count as usize / n.max(1)).max(1) as i64;
        let mut stmt = self.conn.prepare("SELECT text FROM chunks WHERE id % ?1 = 0 LIMIT ?2")?;
        let texts = stmt.query_map(rusqlite::params![step, n as i64], |r| r.get::<_, String>(0))?.collect::<std::result::Result<_, _>>()?;
        Ok((texts, chars as u64))
    }

    pub fn chunk_count(&self) -> Result<usize> {
        Ok(self.conn.query_row("SELECT COUNT(*) FROM chunks", [], |r| r.get::<_, i64>(0))? as usize)
    }

    /// Calls `f` with every stored vector (for rebuilding the vector index).
    pub fn for_each_vector(&self, mut f: impl FnMut(u64, &[f32]) -> Result<()>) -> Result<()> {
        let mut stmt = self.conn.prepare("SELECT id, embedding FROM chunks")?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            let id: i64 = row.get(0)?;
            let blob: Vec<u8> = row.get(1)?;
            f(id as u64, &from_blob(&blob))?;
        }
        Ok(())
    }

    /// Stored vectors of the given chunks (unknown ids are skipped).
    pub fn embeddings_by_ids(&self, ids: &[u64]) -> Result<HashMap<u64, Vec<f32>>> {
        let mut stmt = self.conn.prepare_cached("SELECT embedding FROM chunks WHERE id = ?1")?;
        let mut out = HashMap::with_capacity(ids.len());
        for &id in ids {
            if let Some(blob) = stmt.query_row([id as i64], |r| r.get::<_, Vec<u8>>(0)).optional()? {
                out.insert(id, from_blob(&blob));
            }
        }
        Ok(out)
    }

    /// A document's chunks, in order.
    pub fn document_chunks(&self, path: &str) -> Result<Vec<ChunkRow>> {
        let ids: Vec<u64> = self
            .conn
            .prepare_cached("SELECT c.id FROM chunks c JOIN documents d ON d.id = c.doc_id WHERE d.path = ?1 ORDER BY c.chunk_index")?
            .query_map([path], |r| r.get::<_, i64>(0))?
            .map(|id| id.map(|id| id as u64))
            .collect::<rusqlite::Result<_>>()?;
        self.chunks_by_ids(&ids)
    }

    /// Chunks by id, in the order given (unknown ids are skipped).
    pub fn chunks_by_ids(&self, ids: &[u64]) -> Result<Vec<ChunkRow>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT c.id, d.path, d.title, c.chunk_index, c.total_chunks, c.heading_path, c.page, c.byte_start, c.byte_end, c.text, d.front_matter
             FROM chunks c JOIN documents d ON d.id = c.doc_id WHERE c.id = ?1",
        )?;
        let mut out = Vec::with_capacity(ids.len());
        for &id in ids {
            let row = stmt
                .query_row([id as i64], |r| {
                    Ok(ChunkRow {
                        id: r.get(0)?,
                        source: r.get(1)?,
                        title: r.get(2)?,
                        chunk_index: r.get::<_, i64>(3)? as usize,
                        total_chunks: r.get::<_, i64>(4)? as usize,
                        heading_path: r.get(5)?,
                        page: r.get(6)?,
                        byte_start: r.get::<_, i64>(7)? as usize,
                        byte_end: r.get::<_, i64>(8)? as usize,
                        text: r.get(9)?,
                        collection: None,
                        url: link_of(&r.get::<_, String>(10)?),
                    })
                })
                .optional()?;
            out.extend(row);
        }
        Ok(out)
    }

    /// `PRAGMA integrity_check` plus the FTS index's own check.
    pub fn integrity_check(&self) -> Result<Vec<String>> {
        let mut stmt = self.conn.prepare("PRAGMA integrity_check")?;
        let mut problems: Vec<String> =
            stmt.query_map([], |r| r.get::<_, String>(0))?.collect::<rusqlite::Result<Vec<_>>>()?.into_iter().filter(|s| s != "ok").collect();
        if let Err(e) = self.conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('integrity-check')", []) {
            problems.push(format!("fts: {e}"));
        }
        let orphans: i64 = self.conn.query_row("SELECT COUNT(*) FROM chunks WHERE doc_id NOT IN (SELECT id FROM documents)", [], |r| r.get(0))?;
        if orphans > 0 {
            problems.push(format!("{orphans} orphan chunks"));
        }
        Ok(problems)
    }
}

/// The body of [`Store::apply_then`]: the changes, uncommitted.
fn apply_changes(tx: &Transaction, changes: &[DocChange]) -> Result<VectorDelta> {
    let mut delta = VectorDelta::default();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64);
    for change in changes {
        match change {
            DocChange::Replace { file, content_hash, title, front_matter, chunks } => {
                let doc_id = upsert_document(tx, file, Some(content_hash), DocStatus::Indexed, None, title.as_deref(), front_matter, now)?;
                delta.removed.extend(delete_chunks(tx, doc_id)?);
                insert_chunks(tx, doc_id, &file.path, title.as_deref(), chunks, &mut delta)?;
            }
            DocChange::Touch { file } => {
                tx.execute(
                    "UPDATE documents SET size = ?1, mtime_ns = ?2, updated_at = ?3 WHERE path = ?4",
                    params![file.size as i64, file.mtime_ns, now, file.path],
                )?;
            }
            DocChange::Failed { file, message } => {
                let doc_id = upsert_document(tx, file, None, DocStatus::Error, Some(message), None, "{}", now)?;
                delta.removed.extend(delete_chunks(tx, doc_id)?);
                tx.execute("UPDATE documents SET chunk_count = 0 WHERE id = ?1", [doc_id])?;
            }
            DocChange::Remove { path } => {
                if let Some(doc_id) = tx.query_row("SELECT id FROM documents WHERE path = ?1", [path], |r| r.get::<_, i64>(0)).optional()? {
                    delta.removed.extend(delete_chunks(tx, doc_id)?);
                    tx.execute("DELETE FROM documents WHERE id = ?1", [doc_id])?;
                }
            }
        }
    }
    if !delta.removed.is_empty() || !delta.added.is_empty() {
        bump_generation(tx)?;
    }
    Ok(delta)
}

/// The web address in a document's stored front matter (see [`crate::web::web_link`]).
fn link_of(front_matter_json: &str) -> Option<String> {
    if front_matter_json == "{}" {
        return None;
    }
    crate::web::web_link(&serde_json::from_str(front_matter_json).ok()?)
}

/// Lists new chunk `id` among the Chinese chunks if its text is Chinese.
fn record_language(tx: &Transaction, id: i64, text: &str) -> Result<()> {
    if Language::of_text(text) == Language::Chinese {
        tx.prepare_cached("INSERT OR IGNORE INTO chinese_chunks(id) VALUES (?1)")?.execute([id])?;
    }
    Ok(())
}

/// Inserts a document's chunks and their FTS rows, recording each in `delta`.
fn insert_chunks(tx: &Transaction, doc_id: i64, path: &str, title: Option<&str>, chunks: &[NewChunk], delta: &mut VectorDelta) -> Result<()> {
    let mut insert = tx.prepare_cached(
        "INSERT INTO chunks(doc_id, chunk_index, total_chunks, heading_path, page, byte_start, byte_end, text, hash, embedding)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    )?;
    for c in chunks {
        insert.execute(params![
            doc_id,
            c.index as i64,
            chunks.len() as i64,
            c.heading_path,
            c.page,
            c.byte_start as i64,
            c.byte_end as i64,
            c.text,
            c.hash,
            to_blob(&c.embedding)
        ])?;
        let id = tx.last_insert_rowid();
        record_language(tx, id, &c.text)?;
        let tokens = fts_tokens(&c.heading_path, &c.names, &c.text);
        tx.prepare_cached("INSERT INTO chunks_fts(rowid, tokens) VALUES (?1, ?2)")?.execute(params![id, tokens])?;
        let row = ChunkRow {
            id,
            source: path.to_string(),
            title: title.map(str::to_string),
            chunk_index: c.index,
            total_chunks: chunks.len(),
            heading_path: c.heading_path.clone(),
            page: c.page,
            byte_start: c.byte_start,
            byte_end: c.byte_end,
            text: c.text.clone(),
            collection: None,
            url: None,
        };
        delta.added.push(AddedVector { id: id as u64, vector: c.embedding.clone(), row, tokens });
    }
    tx.execute("UPDATE documents SET chunk_count = ?1 WHERE id = ?2", params![chunks.len() as i64, doc_id])?;
    Ok(())
}

/// Writes one `meta` value (inside a transaction or not).
fn put_meta(conn: &Connection, key: &MetaKey, value: &str) -> Result<()> {
    conn.execute("INSERT INTO meta(key, value) VALUES (?1, ?2) ON CONFLICT(key) DO UPDATE SET value = excluded.value", params![key.name(), value])?;
    Ok(())
}

/// The generation counter as `conn` (or a transaction) sees it.
fn generation_in(conn: &Connection) -> Result<i64> {
    let value: Option<String> = conn.query_row("SELECT value FROM meta WHERE key = ?1", [MetaKey::Generation.name()], |r| r.get(0)).optional()?;
    Ok(value.and_then(|g| g.parse().ok()).unwrap_or(0))
}

fn bump_generation(tx: &Transaction) -> Result<()> {
    tx.execute(
        "INSERT INTO meta(key, value) VALUES (?1, '1')
         ON CONFLICT(key) DO UPDATE SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT)",
        [MetaKey::Generation.name()],
    )?;
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn upsert_document(
    tx: &Transaction,
    file: &FileFacts,
    content_hash: Option<&str>,
    status: DocStatus,
    error: Option<&str>,
    title: Option<&str>,
    front_matter: &str,
    now: i64,
) -> Result<i64> {
    tx.execute(
        "INSERT INTO documents(path, kind, size, mtime_ns, content_hash, status, error, title, front_matter, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
         ON CONFLICT(path) DO UPDATE SET kind = excluded.kind, size = excluded.size, mtime_ns = excluded.mtime_ns,
           content_hash = excluded.content_hash, status = excluded.status, error = excluded.error,
           title = excluded.title, front_matter = excluded.front_matter, updated_at = excluded.updated_at",
        params![
            file.path,
            file.kind.map_or(MIRRORED_KIND, DocKind::as_str),
            file.size as i64,
            file.mtime_ns,
            content_hash,
            status.as_str(),
            error,
            title,
            front_matter,
            now
        ],
    )?;
    Ok(tx.query_row("SELECT id FROM documents WHERE path = ?1", [&file.path], |r| r.get(0))?)
}

fn delete_chunks(tx: &Transaction, doc_id: i64) -> Result<Vec<u64>> {
    let ids: Vec<u64> = {
        let mut stmt = tx.prepare_cached("SELECT id FROM chunks WHERE doc_id = ?1")?;
        let rows = stmt.query_map([doc_id], |r| r.get::<_, i64>(0))?;
        rows.map(|r| r.map(|id| id as u64)).collect::<rusqlite::Result<_>>()?
    };
    delete_fts_rows(tx, &ids)?;
    tx.execute("DELETE FROM chunks WHERE doc_id = ?1", [doc_id])?;
    Ok(ids)
}

fn delete_fts_rows(tx: &Transaction, ids: &[u64]) -> Result<()> {
    let mut delete_fts = tx.prepare_cached("DELETE FROM chunks_fts WHERE rowid = ?1")?;
    for &id in ids {
        delete_fts.execute([id as i64])?;
    }
    Ok(())
}

/// What the full-text index holds for a chunk: its segmented heading path,
/// its document's names (front matter) and its text.
pub fn fts_tokens(heading_path: &str, names: &str, text: &str) -> String {
    format!("{}\n{}\n{}", segment::index_text(heading_path), segment::index_text(names), segment::index_text(text))
}

#[cfg(test)]
mod tests;
