//! Progress reporting and cancellation for long operations. The engine
//! reports through a [`ProgressSink`]; the CLI draws a progress bar from it,
//! the desktop shell forwards it to the UI as events.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A problem with one file; never stops the others.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FileError {
    pub path: String,
    pub message: String,
}

/// What one sync did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct SyncReport {
    /// Documents in the index after the sync (indexed or with an error).
    pub documents: usize,
    /// Chunks in the index after the sync.
    pub chunks: usize,
    /// Chunks whose text was new and went through the model.
    pub embedded: usize,
    /// Chunks whose vector was reused from the store.
    pub reused: usize,
    /// Files on disk compared with the index: the whole folder, or only the
    /// paths a change named.
    pub compared: usize,
    /// Files (re)processed in this sync.
    pub processed: usize,
    /// Documents removed because their file is gone.
    pub removed: usize,
    /// Every document currently in error, with its message.
    pub errors: Vec<FileError>,
    pub elapsed_ms: u64,
    /// Of which in the embedding model.
    pub model_ms: u64,
    /// True when the sync stopped early; the rest is picked up next time.
    pub cancelled: bool,
    /// True when indexing is paused: nothing was read (see `Indexer::pause`).
    pub paused: bool,
    /// Files and folders left out on purpose, with why (ignored, not a document).
    pub skipped: Vec<FileError>,
}

/// A progress event of a sync.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum IndexEvent {
    /// The folder was compared with the index.
    Started {
        files_to_index: usize,
        files_to_remove: usize,
        /// The first [`QUEUED_NAMES`] files to read, in order.
        queued: Vec<String>,
    },
    /// Chunks went through the model (for rate and ETA).
    ChunksEmbedded {
        count: usize,
    },
    /// A file is in the index (or failed, with `error`).
    FileDone {
        path: String,
        chunks: usize,
        embedded: usize,
        reused: usize,
        error: Option<String>,
        /// Time spent reading the file (extraction, OCR, chunking).
        read_ms: u64,
        files_done: usize,
        files_total: usize,
    },
    /// A document was dropped because its file is gone.
    Removed {
        path: String,
    },
    Finished {
        report: SyncReport,
    },
}

/// How many of the files a sync will read its start names.
pub const QUEUED_NAMES: usize = 2000;

/// Receives progress events; must be cheap and must not block.
pub trait ProgressSink: Send + Sync {
    fn event(&self, event: &IndexEvent);
}

/// Ignores every event.
impl ProgressSink for () {
    fn event(&self, _: &IndexEvent) {}
}

impl<F: Fn(&IndexEvent) + Send + Sync> ProgressSink for F {
    fn event(&self, event: &IndexEvent) {
        self(event)
    }
}

/// A shared flag that asks a running operation to stop at the next step. A
/// [linked](CancelToken::linked) token also stops when the token it was made
/// from does: the engine gives each index run its own, so "cancel indexing"
/// reaches a run whoever started it.
#[derive(Debug, Clone)]
pub struct CancelToken {
    /// Its own flag first, then those of the tokens it is linked to.
    flags: Vec<Arc<AtomicBool>>,
}

impl Default for CancelToken {
    fn default() -> Self {
        CancelToken { flags: vec![Arc::default()] }
    }
}

impl CancelToken {
    pub fn new() -> Self {
        Self::default()
    }

    /// A new token, cancelled by its own `cancel` or by any of this one's.
    pub fn linked(&self) -> Self {
        let mut flags = vec![Arc::default()];
        flags.extend(self.flags.iter().cloned());
        CancelToken { flags }
    }

    pub fn cancel(&self) {
        self.flags[0].store(true, Ordering::SeqCst);
    }

    pub fn is_cancelled(&self) -> bool {
        self.flags.iter().any(|f| f.load(Ordering::SeqCst))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_linked_token_stops_with_any_token_it_came_from() {
        let (root, middle) = (CancelToken::new(), CancelToken::new());
        let run = middle.linked();
        assert!(!run.is_cancelled());
        run.cancel();
        assert!(run.is_cancelled() && !middle.is_cancelled(), "cancelling a run leaves its caller's token alone");
        let chained = root.linked().linked();
        root.cancel();
        assert!(chained.is_cancelled());
    }
}
