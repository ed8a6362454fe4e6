//! [`Indexer`]: the engine's indexing — syncs of the whole knowledge
//! folder or some of its paths (one at a time, cancellable), the vector
//! file saved on a debounce, what re-embedding would cost, and the store's
//! integrity check.

use std::path::PathBuf;
use std::time::Instant;

use super::{Engine, ReembedCost, VectorsSaved};
use crate::error::{Error, Result};
use crate::ingest::SyncScope;
use crate::progress::{CancelToken, ProgressSink, SyncReport};

/// Passes a run's events on and keeps the files it has yet to read (what
/// the status calls queued, also after a pause or a cancel).
struct Tracked<'a> {
    inner: &'a dyn ProgressSink,
    queued: &'a std::sync::Mutex<Vec<String>>,
}

impl ProgressSink for Tracked<'_> {
    fn event(&self, event: &crate::progress::IndexEvent) {
        match event {
            crate::progress::IndexEvent::Started { queued, .. } => *self.queued.lock().unwrap_or_else(|p| p.into_inner()) = queued.clone(),
            crate::progress::IndexEvent::FileDone { path, .. } => self.queued.lock().unwrap_or_else(|p| p.into_inner()).retain(|q| q != path),
            _ => {}
        }
        self.inner.event(event);
    }
}

/// The engine's indexing (see [`Engine::indexer`]).
pub struct Indexer<'a> {
    pub(super) engine: &'a Engine,
}

impl Indexer<'_> {
    /// Brings the index in step with the knowledge folder (one sync at a time).
    pub fn sync(&self, sink: &dyn ProgressSink, cancel: &CancelToken) -> Result<SyncReport> {
        self.sync_scope(&SyncScope::Everything, sink, cancel)
    }

    /// Brings the index in step with some files and folders of the
    /// knowledge folder (absolute paths; gone ones are dropped from the index).
    pub fn sync_paths(&self, paths: &[PathBuf], sink: &dyn ProgressSink, cancel: &CancelToken) -> Result<SyncReport> {
        self.sync_scope(&SyncScope::Paths(paths.to_vec()), sink, cancel)
    }

    /// A consistent copy of the index's store at `dest` (documents, chunks,
    /// vectors; no conversations), taken while indexing may go on.
    pub fn snapshot(&self, dest: &std::path::Path) -> Result<()> {
        self.engine.reader.lock().unwrap_or_else(|p| p.into_inner()).export_copy(dest)
    }

    /// Stops the index run in progress, whoever started it (the watcher, the
    /// app, a document's re-index), after the file or batch at hand.
    pub fn cancel(&self) {
        if let Some(run) = self.engine.active_run.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
            run.cancel();
        }
    }

    /// Embeds texts with the engine's model exactly as ingest does (used by
    /// the benchmark to measure the raw model time).
    pub fn embed_passages(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        self.engine.with_embedder(|m| m.embed_passages(texts))
    }

    /// Pauses indexing: the run in progress stops after the file or batch
    /// at hand, and later syncs (the watcher's too) read nothing until
    /// [`Indexer::resume`]. Searches go on over what is indexed.
    pub fn pause(&self) {
        self.engine.paused.store(true, std::sync::atomic::Ordering::SeqCst);
        self.cancel();
    }

    /// Resumes indexing and syncs the whole folder: the files a pause left
    /// unread (and any change since) are read now; the rest are skipped as unchanged.
    pub fn resume(&self, sink: &dyn ProgressSink, cancel: &CancelToken) -> Result<SyncReport> {
        self.engine.paused.store(false, std::sync::atomic::Ordering::SeqCst);
        self.sync(sink, cancel)
    }

    /// Whether indexing is paused.
    pub fn paused(&self) -> bool {
        self.engine.paused.load(std::sync::atomic::Ordering::SeqCst)
    }

    fn sync_scope(&self, scope: &SyncScope, sink: &dyn ProgressSink, cancel: &CancelToken) -> Result<SyncReport> {
        self.engine.writable()?;
        let _one_at_a_time = self.engine.sync_lock.lock().unwrap_or_else(|p| p.into_inner());
        if self.engine.retired.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(Error::Cancelled);
        }
        if self.paused() {
            return Ok(SyncReport { paused: true, ..SyncReport::default() });
        }
        if let Some(team) = self.engine.team.as_ref().filter(|t| t.needs_reconcile()) {
            // A write failed (the server was lost): redo what it left undone.
            crate::team::reconcile(team, &self.engine.store())?;
        }
        // A switch allowed at open but not made there (a remote embedder's
        // dimension is known once it answers): made now, so this sync embeds
        // every document again rather than only the changed ones.
        let indexed = self.engine.store().model()?.map(|(id, _)| id);
        if self.engine.config.reembed && indexed.is_some_and(|id| id != self.engine.config.model_id) {
            self.engine.with_embedder(|_| Ok(()))?;
        }
        let run = cancel.linked();
        *self.engine.active_run.lock().unwrap_or_else(|p| p.into_inner()) = Some(run.clone());
        let tracked = Tracked { inner: sink, queued: &self.engine.queued };
        let report = self.engine.ingest().sync(scope, &tracked, &run);
        *self.engine.active_run.lock().unwrap_or_else(|p| p.into_inner()) = None;
        if let (Ok(report), SyncScope::Everything) = (&report, scope) {
            let skipped = serde_json::to_string(&report.skipped).unwrap_or_default();
            self.engine.store().set_meta(&crate::store::MetaKey::Skipped, &skipped)?;
        }
        report.map(|r| SyncReport { paused: self.paused(), ..r })
    }

    /// Saves the vector file if the index changed since it was last saved.
    pub fn save_pending_vectors(&self) -> Result<()> {
        let mut saved = self.engine.vectors_saved.lock().unwrap_or_else(|p| p.into_inner());
        if saved.dirty {
            self.engine.save_vectors(saved.generation)?;
            *saved = VectorsSaved { at: Instant::now(), dirty: false, generation: saved.generation };
        }
        Ok(())
    }

    /// What re-embedding the whole index would take.
    pub fn reembed_cost(&self) -> Result<ReembedCost> {
        let store = self.engine.store();
        let chunks = store.chunk_count()?;
        let per_chunk_ms: f64 = store.meta(&crate::store::MetaKey::EmbedMsPerChunk)?.and_then(|v| v.parse().ok()).unwrap_or(100.0);
        Ok(ReembedCost {
            indexed_model: store.model()?.map(|m| m.0),
            documents: store.document_count()?,
            chunks,
            estimated_seconds: (chunks as f64 * per_chunk_ms / 1000.0 * 10.0).round() / 10.0,
        })
    }

    /// Problems found by SQLite's integrity check and by comparing the vector
    /// index with the chunk rows; empty when the store is consistent.
    pub fn integrity_problems(&self) -> Result<Vec<String>> {
        let store = self.engine.store();
        let mut problems = store.integrity_check()?;
        let vectors = self.engine.vectors.read().unwrap_or_else(|p| p.into_inner());
        let mut missing = 0usize;
        store.for_each_vector(|id, _| {
            if !vectors.contains(id) {
                missing += 1;
            }
            Ok(())
        })?;
        let chunks = store.chunk_count()?;
        if missing > 0 || vectors.len() != chunks {
            problems.push(format!("vector index has {} vectors for {chunks} chunks ({missing} missing)", vectors.len()));
        }
        Ok(problems)
    }
}
