//! Incremental sync of the knowledge folder into the index. Files whose size
//! and mtime are unchanged are skipped; changed files are re-extracted and
//! re-chunked, and only chunks whose hash is not already stored go through
//! the model. Work is committed in batches (one transaction each), so a crash
//! loses at most the batch in flight, which the next sync redoes.
//!
//! Files are read (extracted and chunked) on worker threads while the
//! calling thread embeds and commits; each file's reading runs within a time
//! budget — the complex formats in a reader process killed when it
//! overruns, the others on a thread of their own that is abandoned (it
//! may run on) — and one that overruns is recorded as timed out, so no
//! file stalls the rest. A sync covers the whole folder or only some paths
//! (the watcher's events).
//!
//! The [`Ingest`] borrows the parts it writes (the store, the vector index,
//! the profile) and reaches the embedding model through [`IndexModels`]; it
//! knows nothing of the engine that owns them.

use std::collections::{HashMap, HashSet};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Mutex, MutexGuard, RwLock};
use std::time::{Duration, Instant};

use crate::chunk::{chunk_document, Chunk, ChunkConfig};
use crate::error::{Error, Result};
use crate::extract::{extract_with, ExtractContext, Extracted, Ocr};
use crate::profile::Profile;
use crate::progress::{CancelToken, FileError, IndexEvent, ProgressSink, SyncReport};
use crate::reader::{timed_out, ReaderProcess};
use crate::scan::{DiskFile, Listing};
use crate::store::{DocChange, DocRecord, DocStatus, FileFacts, NewChunk, Store};
use crate::vectors::VectorIndex;

/// What indexing needs from the engine's (lazily loaded) model and files.
pub(crate) trait IndexModels {
    /// Embeds passages with the index's model (loading it on first use).
    fn embed_for_index(&self, texts: &[String]) -> Result<Vec<Vec<f32>>>;
    /// The vector index changed: save it (with a stamp of the store's
    /// state) now when `now`, else soon (a crash before then only means a
    /// rebuild from SQLite on the next open).
    fn vectors_changed(&self, now: bool) -> Result<()>;
}

/// Which files a sync compares with the index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SyncScope {
    /// The whole knowledge folder.
    Everything,
    /// These files and folders (absolute paths inside the knowledge folder),
    /// whether they still exist or not.
    Paths(Vec<PathBuf>),
}

/// How long reading one file may take: a base plus an allowance per
/// megabyte (scanned pages go through OCR).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileBudget {
    pub base: Duration,
    pub per_megabyte: Duration,
}

impl Default for FileBudget {
    fn default() -> Self {
        FileBudget { base: Duration::from_secs(30), per_megabyte: Duration::from_secs(15) }
    }
}

impl FileBudget {
    pub fn for_size(&self, bytes: u64) -> Duration {
        self.base + self.per_megabyte.mul_f64(bytes as f64 / 1_000_000.0)
    }
}

/// The indexer over borrowed parts: scan → extract → chunk → embed → store and vectors.
pub(crate) struct Ingest<'a> {
    pub folders: &'a crate::folders::Folders,
    pub max_file_bytes: u64,
    pub chunking: ChunkConfig,
    /// Passages per model call.
    pub batch_size: usize,
    /// Threads reading files while the model embeds.
    pub readers: usize,
    pub budget: FileBudget,
    /// Where PDF, Word and pictures are read (`None`: in this process).
    pub reader: Option<&'a ReaderProcess>,
    pub ocr: Option<&'a Ocr>,
    pub preread: &'a Preread,
    pub store: &'a Mutex<Store>,
    pub vectors: &'a RwLock<Box<dyn VectorIndex>>,
    pub profile: &'a RwLock<Profile>,
    pub models: &'a (dyn IndexModels + Sync),
}

/// A document read before its file was written (a web page Kea keeps is
/// read once, to name its file and to index it), by the BLAKE3 of its
/// bytes: the sync that meets those bytes takes it instead of reading them
/// again. A leaf lock, held alone.
#[derive(Default)]
pub(crate) struct Preread(Mutex<Option<(String, Extracted)>>);

impl Preread {
    /// Keeps `doc` as the reading of `bytes` (replacing any earlier one).
    pub fn keep(&self, bytes: &[u8], doc: Extracted) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some((blake3::hash(bytes).to_hex().to_string(), doc));
    }

    /// The kept reading of the bytes whose BLAKE3 is `hash`, taken.
    fn take(&self, hash: &str) -> Option<Extracted> {
        let mut slot = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if slot.as_ref().is_some_and(|(kept, _)| kept == hash) {
            return slot.take().map(|(_, doc)| doc);
        }
        None
    }
}

/// New chunks gathered before a batch is embedded and committed.
const FLUSH_CHUNKS: usize = 64;
/// Files gathered before a batch is committed even without new chunks.
const FLUSH_FILES: usize = 200;

/// A chunk after extraction, before embedding.
struct PreparedChunk {
    chunk: NewChunk,
    embedding_text: String,
}

/// The outcome of reading one file.
enum Prepared {
    Touch,
    /// The file disappeared between the scan and the read.
    Vanished,
    Failed(String),
    Content {
        content_hash: String,
        title: Option<String>,
        front_matter: String,
        chunks: Vec<PreparedChunk>,
    },
}

struct Pending {
    file: FileFacts,
    prepared: Prepared,
    /// Time spent reading (extracting, chunking) the file.
    read_ms: u64,
}

impl Ingest<'_> {
    fn store(&self) -> MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn profile(&self) -> Profile {
        self.profile.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Brings the index in step with the knowledge folder, or the part of it
    /// in `scope` (the caller holds the engine's one-sync-at-a-time lock).
    pub fn sync(&self, scope: &SyncScope, sink: &dyn ProgressSink, cancel: &CancelToken) -> Result<SyncReport> {
        let started = Instant::now();
        let profile_error = self.reload_profile()?;
        let (listing, stored) = self.compare(scope)?;
        let disk = &listing.files;
        let on_disk: HashSet<&str> = disk.iter().map(|f| f.rel.as_str()).collect();
        let to_index: Vec<&DiskFile> = disk.iter().filter(|f| needs_indexing(f, stored.get(&f.rel))).collect();
        // What could not be read is not gone: its documents stay.
        let mut to_remove: Vec<String> = stored.keys().filter(|p| !on_disk.contains(p.as_str()) && !listing.hides(p)).cloned().collect();
        to_remove.sort();
        let queued = to_index.iter().take(crate::progress::QUEUED_NAMES).map(|f| f.rel.clone()).collect();
        sink.event(&IndexEvent::Started { files_to_index: to_index.len(), files_to_remove: to_remove.len(), queued });

        let report = SyncReport { compared: disk.len(), ..SyncReport::default() };
        let mut run = Run { indexer: self, sink, cancel, report, files_total: to_index.len(), files_done: 0, embed_ms: 0.0 };
        let mut batch: Vec<Pending> = Vec::new();
        let mut new_chunks = 0;
        self.read_in_parallel(&to_index, &stored, cancel, |pending| {
            if let Prepared::Content { chunks, .. } = &pending.prepared {
                new_chunks += chunks.iter().filter(|c| c.chunk.embedding.is_empty()).count();
            }
            batch.push(pending);
            if new_chunks >= FLUSH_CHUNKS || batch.len() >= FLUSH_FILES {
                run.flush(std::mem::take(&mut batch))?;
                new_chunks = 0;
            }
            Ok(!run.report.cancelled)
        })?;
        run.report.cancelled |= cancel.is_cancelled();
        if !run.report.cancelled {
            run.flush(batch)?;
            // Removals come last, so a renamed file reuses its old vectors.
            run.remove(to_remove)?;
        }
        if run.report.processed > 0 || run.report.removed > 0 {
            self.models.vectors_changed(*scope == SyncScope::Everything)?;
        }
        if run.report.embedded >= MEASURE_MIN_CHUNKS {
            let per_chunk = run.embed_ms / run.report.embedded as f64;
            self.store().set_meta(&crate::store::MetaKey::EmbedMsPerChunk, &format!("{per_chunk:.2}"))?;
        }
        run.report.model_ms = run.embed_ms.round() as u64;
        let mut report = self.summarise(run.report)?;
        if let Some(message) = profile_error {
            report.errors.insert(0, FileError { path: crate::profile::PROFILE_FILE.into(), message });
        }
        report.errors.extend(listing.unreadable.into_iter().map(|(path, message)| FileError { path, message }));
        report.skipped = listing.skipped.into_iter().map(|(path, message)| FileError { path, message }).collect();
        report.elapsed_ms = started.elapsed().as_millis() as u64;
        sink.event(&IndexEvent::Finished { report: report.clone() });
        Ok(report)
    }

    /// The files on disk and the stored documents within `scope`.
    fn compare(&self, scope: &SyncScope) -> Result<(Listing, HashMap<String, DocRecord>)> {
        let by_path = |docs: Vec<DocRecord>| docs.into_iter().map(|d| (d.path.clone(), d));
        let SyncScope::Paths(paths) = scope else {
            return Ok((self.folders.scan()?, by_path(self.store().documents()?).collect()));
        };
        let mut listing = Listing::default();
        let mut stored = HashMap::new();
        for path in paths {
            let Some(rel) = self.folders.relative(path) else { continue };
            if rel.as_os_str().is_empty() {
                return self.compare(&SyncScope::Everything);
            }
            let Some((found, key)) = self.folders.scan_path(path) else { continue };
            listing.files.extend(found.files);
            listing.unreadable.extend(found.unreadable);
            stored.extend(by_path(self.store().documents_under(&key)?));
        }
        listing.files.sort_by(|a, b| a.rel.cmp(&b.rel));
        listing.files.dedup_by(|a, b| a.rel == b.rel);
        Ok((listing, stored))
    }

    /// The report with the index's totals and current errors (not only this sync's).
    fn summarise(&self, mut report: SyncReport) -> Result<SyncReport> {
        let store = self.store();
        let (documents, errors) = store.document_errors()?;
        report.documents = documents;
        report.errors = errors.into_iter().map(|(path, message)| FileError { path, message }).collect();
        report.chunks = store.chunk_count()?;
        Ok(report)
    }

    /// Reads `files` on [`Ingest::readers`] threads and hands each result
    /// to `consume` on this thread, which returns whether to go on. Stops
    /// early on cancel, on `false` or on an error (returned).
    fn read_in_parallel(
        &self,
        files: &[&DiskFile],
        stored: &HashMap<String, DocRecord>,
        cancel: &CancelToken,
        mut consume: impl FnMut(Pending) -> Result<bool>,
    ) -> Result<()> {
        let readers = self.readers.clamp(1, files.len().max(1));
        let next = AtomicUsize::new(0);
        let (results, received) = mpsc::sync_channel::<Pending>(readers * 2);
        std::thread::scope(|threads| {
            for _ in 0..readers {
                let results = results.clone();
                let next = &next;
                threads.spawn(move || loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    if i >= files.len() || cancel.is_cancelled() {
                        break;
                    }
                    let started = Instant::now();
                    let prepared = self.prepare(files[i], stored.get(&files[i].rel));
                    let read_ms = started.elapsed().as_millis() as u64;
                    if results.send(Pending { file: facts(files[i]), prepared, read_ms }).is_err() {
                        break;
                    }
                });
            }
            drop(results);
            for pending in received {
                if !consume(pending)? {
                    break;
                }
            }
            Ok(())
        })
    }

    /// Reads, extracts and chunks one file, and looks up stored vectors for
    /// its chunks (a chunk with an empty embedding still needs the model).
    fn prepare(&self, file: &DiskFile, stored: Option<&DocRecord>) -> Prepared {
        if file.size > self.max_file_bytes {
            return Prepared::Failed(format!("file is {} MB, over the {} MB limit", file.size / 1_000_000, self.max_file_bytes / 1_000_000));
        }
        // Reading counts against the file's time budget too (a stalled network mount).
        let budget = self.budget.for_size(file.size);
        let deadline = Instant::now() + budget;
        let (owned, limit) = (file.clone(), self.max_file_bytes);
        let bytes = match within(deadline, move || read_limited(&owned, limit)) {
            Some(Ok(Some(bytes))) => bytes,
            Some(Ok(None)) => return Prepared::Vanished,
            Some(Err(message)) => return Prepared::Failed(message),
            None => return Prepared::Failed(timed_out(budget)),
        };
        let content_hash = blake3::hash(&bytes).to_hex().to_string();
        let preread = self.preread.take(&content_hash);
        if let Some(doc) = stored {
            if doc.status == DocStatus::Indexed && doc.content_hash.as_deref() == Some(content_hash.as_str()) {
                return Prepared::Touch;
            }
        }
        let context = ExtractContext { ocr: self.ocr.cloned(), deadline };
        let read = match preread {
            Some(doc) => Ok(doc),
            None => read_document(file.kind, bytes, self.reader, context),
        };
        let mut doc = match read {
            Ok(doc) => doc,
            Err(message) => return Prepared::Failed(message),
        };
        let chunks = chunk_document(&doc, &self.chunking);
        let names = self.profile().names(&doc.front_matter);
        if doc.title.is_none() {
            doc.title = names.first().cloned().or_else(|| file.abs.file_stem().map(|s| s.to_string_lossy().into_owned()));
        }
        let mut prepared: Vec<PreparedChunk> = chunks.into_iter().map(|c| prepare_chunk(c, doc.title.as_deref(), &names)).collect();
        let hashes: Vec<&str> = prepared.iter().map(|c| c.chunk.hash.as_str()).collect();
        match self.store().embeddings_for_hashes(&hashes) {
            Ok(known) => {
                for c in &mut prepared {
                    if let Some(v) = known.get(&c.chunk.hash) {
                        c.chunk.embedding = v.clone();
                    }
                }
            }
            Err(e) => return Prepared::Failed(format!("store error: {e}")),
        }
        let front_matter = serde_json::to_string(&doc.front_matter).unwrap_or_else(|_| "{}".into());
        Prepared::Content { content_hash, title: doc.title, front_matter, chunks: prepared }
    }
}

/// Extracts `bytes` as a document of `kind` within the context's deadline:
/// in a reader process when `reader` is given and reads the kind (killed at
/// the deadline), else on a thread of its own. A thread that overruns is
/// abandoned — left to finish (or not) on its own, its result dropped —
/// which is why the formats whose parsers can run long go to the process
/// (and the HTML reader also stops itself at the deadline).
pub(crate) fn read_document(
    kind: crate::extract::DocKind,
    bytes: Vec<u8>,
    reader: Option<&ReaderProcess>,
    context: ExtractContext,
) -> std::result::Result<Extracted, String> {
    match reader.filter(|_| ReaderProcess::reads(kind)).map(ReaderProcess::start) {
        Some(Ok(child)) => child.extract(kind, bytes, &context),
        // Without its process the file would be read without its limits.
        Some(Err(e)) => Err(format!("the document reader could not be started ({e}): Kea does not read this file without its limits; re-index it later")),
        None => {
            let deadline = context.deadline;
            let budget = deadline.saturating_duration_since(Instant::now());
            within(deadline, move || extract_with(kind, &bytes, &context)).unwrap_or_else(|| Err(timed_out(budget)))
        }
    }
}

/// Runs `read` on its own thread; `None` when it is still running at
/// `deadline`. A panic is an error for the file, not for the sync.
fn within<T: Send + 'static>(
    deadline: Instant,
    read: impl FnOnce() -> std::result::Result<T, String> + Send + 'static,
) -> Option<std::result::Result<T, String>> {
    let (tx, rx) = mpsc::channel();
    let spawned = std::thread::Builder::new().name("kea-read".into()).spawn(move || {
        let _ = tx.send(catch_unwind(AssertUnwindSafe(read)));
    });
    if let Err(e) = spawned {
        return Some(Err(format!("cannot start a reader thread: {e}")));
    }
    match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        Ok(Ok(result)) => Some(result),
        Ok(Err(_)) | Err(mpsc::RecvTimeoutError::Disconnected) => Some(Err("internal error while reading this file (please report it)".into())),
        Err(mpsc::RecvTimeoutError::Timeout) => None,
    }
}

/// A chunk as stored, with the text its embedding is of (title, heading,
/// own-language names and text) and that text's hash.
fn prepare_chunk(c: Chunk, title: Option<&str>, names: &[String]) -> PreparedChunk {
    let (own, searchable) = names_for_chunk(names, &c);
    let embedding_text = c.embedding_text(title, &own);
    let hash = blake3::hash(embedding_text.as_bytes()).to_hex().to_string();
    PreparedChunk {
        chunk: NewChunk {
            index: c.index,
            heading_path: c.heading_path,
            page: c.page,
            byte_start: c.range.start,
            byte_end: c.range.end,
            text: c.text,
            names: searchable,
            hash,
            embedding: Vec::new(),
        },
        embedding_text,
    }
}

/// A chunk's names: those written in its own language go into its embedded
/// text and its full-text entry; the other language's names only into the
/// document's first chunk's full-text entry, so an alias in either language
/// finds the document without every chunk competing for the other
/// language's questions (measured on tests/golden/sample-knowledge.jsonl).
fn names_for_chunk(names: &[String], chunk: &Chunk) -> (Vec<String>, String) {
    let language = crate::language::Language::of_text(&chunk.text);
    let own: Vec<String> = names.iter().filter(|n| crate::language::Language::of_text(n) == language).cloned().collect();
    let searchable = if chunk.index == 0 { names.join(", ") } else { own.join(", ") };
    (own, searchable)
}

/// Store meta key: how chunks were built (the format and the profile's
/// name keys); a different value makes the next sync read every document again.
/// Bumped when chunk text, embedding text or full-text tokens change shape.
const CHUNK_FORMAT: &str = "3:chinese-characters";

impl Ingest<'_> {
    /// Re-reads `kea.toml`; a broken file keeps the previous profile and
    /// returns the problem for the report. A changed profile (or chunk
    /// format) marks every document to be read again.
    fn reload_profile(&self) -> Result<Option<String>> {
        let loaded = self.folders.primary().map_or_else(|| Ok(Profile::default()), Profile::load);
        let (profile, problem) = match loaded {
            Ok(profile) => (profile, None),
            Err(message) => (self.profile(), Some(message)),
        };
        let mut format = format!("{CHUNK_FORMAT};{}", profile.names_signature());
        if self.chunking != crate::chunk::ChunkConfig::default() {
            // A collection's own chunk size: changing it reads every document again.
            let c = &self.chunking;
            format.push_str(&format!(";chunks={}/{}/{}", c.target_chars, c.overlap_chars, c.max_chars));
        }
        *self.profile.write().unwrap_or_else(|p| p.into_inner()) = profile;
        let store = self.store();
        if store.meta(&crate::store::MetaKey::ChunkFormat)?.as_deref() != Some(format.as_str()) {
            store.reread_all_documents()?;
            store.set_meta(&crate::store::MetaKey::ChunkFormat, &format)?;
        }
        Ok(problem)
    }
}

fn needs_indexing(file: &DiskFile, stored: Option<&DocRecord>) -> bool {
    match stored {
        None => true,
        Some(doc) => {
            let unchanged = doc.size == file.size && doc.mtime_ns == file.mtime_ns;
            let complete = doc.status == DocStatus::Error || doc.content_hash.is_some();
            !(unchanged && complete)
        }
    }
}

fn facts(file: &DiskFile) -> FileFacts {
    FileFacts { path: file.rel.clone(), kind: Some(file.kind), size: file.size, mtime_ns: file.mtime_ns }
}

/// Reads a document up to `limit` bytes (see [`crate::scan::read_regular`]).
fn read_limited(file: &DiskFile, limit: u64) -> std::result::Result<Option<Vec<u8>>, String> {
    crate::scan::read_regular(&file.abs, limit)
}

/// The state of one sync while batches are flushed.
/// Fewer embedded chunks than this say little about the model's speed.
const MEASURE_MIN_CHUNKS: usize = 8;

struct Run<'a> {
    indexer: &'a Ingest<'a>,
    sink: &'a dyn ProgressSink,
    cancel: &'a CancelToken,
    report: SyncReport,
    files_total: usize,
    files_done: usize,
    /// Time spent in the model, for the re-embedding estimate.
    embed_ms: f64,
}

impl Run<'_> {
    /// Embeds the batch's new chunks, commits the batch in one transaction
    /// and mirrors the change into the vector index.
    fn flush(&mut self, mut batch: Vec<Pending>) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let vectors = self.embed_new_chunks(&mut batch)?;
        let Some(vectors) = vectors else { return Ok(()) };
        let mut changes = Vec::with_capacity(batch.len());
        let mut done = Vec::with_capacity(batch.len());
        for pending in batch {
            let path = pending.file.path.clone();
            let (mut chunk_count, mut embedded, mut reused, mut error) = (0, 0, 0, None);
            match pending.prepared {
                Prepared::Touch => changes.push(DocChange::Touch { file: pending.file }),
                Prepared::Vanished => changes.push(DocChange::Remove { path: path.clone() }),
                Prepared::Failed(message) => {
                    error = Some(message.clone());
                    changes.push(DocChange::Failed { file: pending.file, message });
                }
                Prepared::Content { content_hash, title, front_matter, chunks } => {
                    let chunks: Vec<NewChunk> = chunks
                        .into_iter()
                        .map(|mut c| {
                            if c.chunk.embedding.is_empty() {
                                c.chunk.embedding = vectors[&c.chunk.hash].clone();
                                embedded += 1;
                            } else {
                                reused += 1;
                            }
                            c.chunk
                        })
                        .collect();
                    chunk_count = chunks.len();
                    changes.push(DocChange::Replace { file: pending.file, content_hash, title, front_matter, chunks });
                }
            }
            self.report.reused += reused;
            let (read_ms, files_total) = (pending.read_ms, self.files_total);
            done.push(IndexEvent::FileDone { path, chunks: chunk_count, embedded, reused, error, read_ms, files_done: 0, files_total });
        }
        self.commit(&changes)?;
        for mut event in done {
            self.files_done += 1;
            self.report.processed += 1;
            if let IndexEvent::FileDone { files_done, .. } = &mut event {
                *files_done = self.files_done;
            }
            self.sink.event(&event);
        }
        Ok(())
    }

    /// Embeds each distinct new chunk text once. `None` means cancelled.
    fn embed_new_chunks(&mut self, batch: &mut [Pending]) -> Result<Option<HashMap<String, Vec<f32>>>> {
        let mut texts: Vec<(String, String)> = Vec::new();
        let mut seen = HashSet::new();
        for pending in batch.iter() {
            if let Prepared::Content { chunks, .. } = &pending.prepared {
                for c in chunks.iter().filter(|c| c.chunk.embedding.is_empty()) {
                    if seen.insert(c.chunk.hash.clone()) {
                        texts.push((c.chunk.hash.clone(), c.embedding_text.clone()));
                    }
                }
            }
        }
        let mut vectors = HashMap::with_capacity(texts.len());
        let step = self.indexer.batch_size.max(1);
        for group in texts.chunks(step) {
            if self.cancel.is_cancelled() {
                self.report.cancelled = true;
                return Ok(None);
            }
            let inputs: Vec<String> = group.iter().map(|(_, t)| t.clone()).collect();
            let model_started = Instant::now();
            let embedded = self.indexer.models.embed_for_index(&inputs);
            self.embed_ms += model_started.elapsed().as_secs_f64() * 1000.0;
            let embedded = match embedded {
                Ok(v) => v,
                // A missing model is fatal for the sync; a failing input is not.
                Err(e @ (Error::ModelMissing { .. } | Error::RuntimeMissing(_) | Error::ReembedRequired { .. })) => return Err(e),
                Err(e) => {
                    fail_documents_with(batch, group.iter().map(|(h, _)| h.as_str()).collect(), &e.to_string());
                    continue;
                }
            };
            for ((hash, _), vector) in group.iter().zip(embedded) {
                vectors.insert(hash.clone(), vector);
            }
            self.report.embedded += group.len();
            self.sink.event(&IndexEvent::ChunksEmbedded { count: group.len() });
        }
        Ok(Some(vectors))
    }

    /// Drops the documents whose files are gone.
    fn remove(&mut self, paths: Vec<String>) -> Result<()> {
        if paths.is_empty() {
            return Ok(());
        }
        let changes: Vec<DocChange> = paths.iter().map(|p| DocChange::Remove { path: p.clone() }).collect();
        self.commit(&changes)?;
        for path in paths {
            self.sink.event(&IndexEvent::Removed { path });
            self.report.removed += 1;
        }
        Ok(())
    }

    /// Commits changes and applies the resulting delta to the vector index;
    /// a shared index is written first, so its failure commits nothing, and
    /// under the read lock, so searches go on meanwhile. Locks are taken in
    /// the engine's one order: the store, then the vectors.
    fn commit(&mut self, changes: &[DocChange]) -> Result<()> {
        let mut store = self.indexer.store();
        let vectors = self.indexer.vectors.read().unwrap_or_else(|p| p.into_inner());
        let mut local = true;
        let delta = store.apply_then(changes, |delta| match vectors.write_shared(delta) {
            Some(written) => {
                local = false;
                written
            }
            None => Ok(()),
        })?;
        drop(vectors);
        if local {
            self.indexer.vectors.write().unwrap_or_else(|p| p.into_inner()).apply(&delta)?;
        }
        Ok(())
    }
}

/// Marks the documents that own any of `hashes` as failed (embedding error).
fn fail_documents_with(batch: &mut [Pending], hashes: HashSet<&str>, message: &str) {
    for pending in batch.iter_mut() {
        let owns = matches!(&pending.prepared, Prepared::Content { chunks, .. }
            if chunks.iter().any(|c| hashes.contains(c.chunk.hash.as_str())));
        if owns {
            pending.prepared = Prepared::Failed(format!("embedding failed: {message}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reading_that_never_finishes_is_abandoned_at_the_deadline() {
        let started = Instant::now();
        let never = within(Instant::now() + Duration::from_millis(200), || -> std::result::Result<(), String> {
            loop {
                std::thread::sleep(Duration::from_secs(1));
            }
        });
        assert!(never.is_none());
        assert!(started.elapsed() < Duration::from_secs(5));
        let deadline = Instant::now() + Duration::from_secs(60);
        assert_eq!(within(deadline, || Ok(7)), Some(Ok(7)));
        let panicked = within(deadline, || -> std::result::Result<(), String> { panic!("a reader bug") }).unwrap().unwrap_err();
        assert!(panicked.starts_with("internal error"), "{panicked}");
    }

    /// Issue 24: a FIFO in a document's place blocked the open for ever.
    #[cfg(unix)]
    #[test]
    fn a_fifo_is_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pipe.md");
        assert!(std::process::Command::new("mkfifo").arg(&path).status().unwrap().success());
        let file = DiskFile { rel: "pipe.md".into(), abs: path, kind: crate::extract::DocKind::Markdown, size: 0, mtime_ns: 0 };
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || tx.send(read_limited(&file, 1 << 20)));
        let read = rx.recv_timeout(Duration::from_secs(10)).expect("the open returned");
        assert!(read.unwrap_err().contains("not a regular file"));
    }

    #[test]
    fn a_file_budget_grows_with_its_size() {
        let budget = FileBudget { base: Duration::from_secs(2), per_megabyte: Duration::from_secs(10) };
        assert_eq!(budget.for_size(0), Duration::from_secs(2));
        assert_eq!(budget.for_size(3_000_000), Duration::from_secs(32));
    }
}
