//! Watching the knowledge folder: file-system events are debounced, and any
//! event that touches an indexable path (or a folder) triggers a sync, which
//! works out what changed from the disk itself (so lost or merged events
//! cannot make the index drift).

use std::path::Path;
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use notify::RecursiveMode;
use notify_debouncer_full::{new_debouncer, DebounceEventResult};

use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::progress::{CancelToken, ProgressSink};
use crate::scan::is_indexable;

/// A running watcher; dropping it (or calling [`WatchHandle::stop`]) stops it.
pub struct WatchHandle {
    stop: CancelToken,
    wake: mpsc::Sender<Option<Vec<std::path::PathBuf>>>,
    thread: Option<JoinHandle<()>>,
    _debouncer: Box<dyn std::any::Any + Send>,
}

impl WatchHandle {
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        self.stop.cancel();
        let _ = self.wake.send(None);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for WatchHandle {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Starts watching the engine's knowledge folder. `on_error` receives sync
/// failures (the watcher keeps running).
pub fn watch(engine: Arc<Engine>, sink: Arc<dyn ProgressSink>, debounce: Duration, on_error: impl Fn(&Error) + Send + 'static) -> Result<WatchHandle> {
    let root = engine.knowledge_dir().to_path_buf();
    let (tx, rx) = mpsc::channel::<Option<Vec<std::path::PathBuf>>>();
    let events_tx = tx.clone();
    let mut debouncer = new_debouncer(debounce, None, move |result: DebounceEventResult| {
        if let Ok(events) = result {
            let paths: Vec<_> = events.into_iter().filter(|e| !e.kind.is_access()).flat_map(|e| e.event.paths).collect();
            if !paths.is_empty() {
                let _ = events_tx.send(Some(paths));
            }
        }
    })
    .map_err(|e| Error::Watch(e.to_string()))?;
    debouncer.watch(&root, RecursiveMode::Recursive).map_err(|e| Error::Watch(format!("{}: {e}", root.display())))?;
    let stop = CancelToken::new();
    let thread_stop = stop.clone();
    let thread = std::thread::Builder::new()
        .name("kea-watch".into())
        .spawn(move || {
            while let Ok(Some(mut paths)) = rx.recv() {
                // Merge everything that queued up while the last sync ran.
                while let Ok(Some(more)) = rx.try_recv() {
                    paths.extend(more);
                }
                if thread_stop.is_cancelled() {
                    break;
                }
                if paths.iter().any(|p| is_relevant(&root, p)) {
                    if let Err(e) = engine.sync(sink.as_ref(), &thread_stop) {
                        on_error(&e);
                    }
                }
            }
        })
        .map_err(|e| Error::io("starting the watcher thread", e))?;
    Ok(WatchHandle { stop, wake: tx, thread: Some(thread), _debouncer: Box::new(debouncer) })
}

/// An indexable file, or something that may be a folder (renamed or deleted
/// folders arrive as one event for the folder).
fn is_relevant(root: &Path, path: &Path) -> bool {
    let Ok(rel) = path.strip_prefix(root) else { return false };
    is_indexable(rel) || path.extension().is_none()
}
