//! Watching the knowledge folder: file-system events are debounced, and the
//! paths they name (files, or folders renamed or deleted as a whole) are
//! synced alone (an ignored one is not indexed: the scan applies the ignore
//! files). A full sync catches anything events missed: when the system says
//! events were dropped, when `kea.toml` or an ignore file (`.keaignore`,
//! `.gitignore`: what they ignore leaves the index) changes — once the
//! rules have settled for [`RULES_SETTLE`], so a rule file rewritten many
//! times in a row (a checkout, a script) costs one sync — and every
//! [`FULL_SYNC_EVERY`] while the folder is quiet. When the folder has been
//! quiet for [`QUIET`], pending vector changes are saved, the indexing
//! model is unloaded after [`RELEASE_MODEL_AFTER`] without a change, and
//! the vectors are mapped from their file instead of held in memory after
//! [`RELEASE_VECTORS_AFTER`] without a search or a change.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use notify::RecommendedWatcher;
use notify::RecursiveMode;
use notify_debouncer_full::{new_debouncer_opt, DebounceEventResult, RecommendedCache};

use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::folders::Folders;
use crate::progress::{CancelToken, ProgressSink};
use crate::scan::{is_ignore_file, is_indexable};

/// A quiet spell after which pending vector changes are saved.
pub const QUIET: Duration = Duration::from_secs(5);
/// How long the rules (an ignore file, `kea.toml`) must stay unchanged
/// before the full sync a change of theirs calls for; events meanwhile
/// join that sync.
pub const RULES_SETTLE: Duration = Duration::from_secs(2);
/// The longest a full sync waits for the rules to settle.
pub const RULES_SETTLE_AT_MOST: Duration = Duration::from_secs(30);
/// How often the whole folder is compared with the index anyway.
pub const FULL_SYNC_EVERY: Duration = Duration::from_secs(15 * 60);
/// The indexing instance of the embedding model is unloaded after this
/// long without a change to index (a quiet app keeps only the query one).
pub const RELEASE_MODEL_AFTER: Duration = Duration::from_secs(5 * 60);

/// A collection's vectors are mapped from their file instead of held in
/// memory after this long without a search or a change.
pub const RELEASE_VECTORS_AFTER: Duration = Duration::from_secs(10 * 60);

/// What wakes the watcher's thread.
enum Wake {
    Paths(Vec<PathBuf>),
    /// Events were lost: compare everything.
    Rescan,
    Stop,
}

/// A running watcher; dropping it (or calling [`WatchHandle::stop`]) stops it.
pub struct WatchHandle {
    stop: CancelToken,
    wake: mpsc::Sender<Wake>,
    thread: Option<JoinHandle<()>>,
    _debouncer: Box<dyn std::any::Any + Send>,
}

impl WatchHandle {
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        self.stop.cancel();
        let _ = self.wake.send(Wake::Stop);
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
    let folders = engine.folders().clone();
    let (tx, rx) = mpsc::channel::<Wake>();
    let events_tx = tx.clone();
    // Links are not followed: a link to `/` or a loop would be watched whole.
    let config = notify::Config::default().with_follow_symlinks(false);
    let on_events = move |result: DebounceEventResult| {
        let wake = match result {
            Ok(events) if events.iter().any(|e| e.need_rescan()) => Wake::Rescan,
            Ok(events) => Wake::Paths(events.into_iter().filter(|e| !e.kind.is_access()).flat_map(|e| e.event.paths).collect()),
            Err(_) => Wake::Rescan,
        };
        if !matches!(&wake, Wake::Paths(paths) if paths.is_empty()) {
            let _ = events_tx.send(wake);
        }
    };
    let mut debouncer = new_debouncer_opt::<_, RecommendedWatcher, RecommendedCache>(debounce, None, on_events, RecommendedCache::new(), config)
        .map_err(|e| Error::Watch(e.to_string()))?;
    for root in folders.roots() {
        debouncer.watch(root, RecursiveMode::Recursive).map_err(|e| Error::Watch(format!("{}: {e}", root.display())))?;
    }
    let stop = CancelToken::new();
    let watcher = Watcher { engine, sink, folders, stop: stop.clone(), on_error: Box::new(on_error) };
    let thread =
        std::thread::Builder::new().name("kea-watch".into()).spawn(move || watcher.run(&rx)).map_err(|e| Error::io("starting the watcher thread", e))?;
    Ok(WatchHandle { stop, wake: tx, thread: Some(thread), _debouncer: Box::new(debouncer) })
}

/// The watcher thread's state.
struct Watcher {
    engine: Arc<Engine>,
    sink: Arc<dyn ProgressSink>,
    folders: Folders,
    stop: CancelToken,
    on_error: Box<dyn Fn(&Error) + Send>,
}

impl Watcher {
    fn run(&self, wakes: &mpsc::Receiver<Wake>) {
        let mut last_full = Instant::now();
        loop {
            let wake = match wakes.recv_timeout(QUIET) {
                Ok(wake) => wake,
                Err(RecvTimeoutError::Timeout) if last_full.elapsed() >= FULL_SYNC_EVERY => Wake::Rescan,
                Err(RecvTimeoutError::Timeout) => {
                    self.report(self.engine.indexer().save_pending_vectors());
                    self.engine.release_idle_models(RELEASE_MODEL_AFTER);
                    self.engine.release_idle_vectors(RELEASE_VECTORS_AFTER);
                    continue;
                }
                Err(RecvTimeoutError::Disconnected) => break,
            };
            // Merge everything that queued up while the last sync ran.
            let Some(changed) = merge(wake, wakes) else { break };
            let Some(changed) = self.settle(changed, wakes) else { break };
            if self.stop.is_cancelled() {
                break;
            }
            let result = match changed {
                Some(paths) => {
                    let paths: Vec<PathBuf> = paths.into_iter().filter(|p| is_relevant(&self.folders, p)).collect();
                    if paths.is_empty() {
                        continue;
                    }
                    if paths.iter().any(|p| changes_the_rules(&self.folders, p)) {
                        self.engine.indexer().sync(self.sink.as_ref(), &self.stop)
                    } else {
                        self.engine.indexer().sync_paths(&paths, self.sink.as_ref(), &self.stop)
                    }
                }
                None => {
                    last_full = Instant::now();
                    self.engine.indexer().sync(self.sink.as_ref(), &self.stop)
                }
            };
            self.report(result.map(drop));
        }
        self.report(self.engine.indexer().save_pending_vectors());
    }

    /// `changed` as it is, unless it changes the rules: then also every
    /// change until the rules have not changed for [`RULES_SETTLE`] (at most
    /// [`RULES_SETTLE_AT_MOST`]). `None` to stop.
    fn settle(&self, mut changed: Option<Vec<PathBuf>>, wakes: &mpsc::Receiver<Wake>) -> Option<Option<Vec<PathBuf>>> {
        let rules = |changed: &Option<Vec<PathBuf>>| changed.as_ref().is_some_and(|paths| paths.iter().any(|p| changes_the_rules(&self.folders, p)));
        if !rules(&changed) {
            return Some(changed);
        }
        let started = Instant::now();
        let mut quiet_from = started;
        loop {
            let wait = (quiet_from + RULES_SETTLE).min(started + RULES_SETTLE_AT_MOST).saturating_duration_since(Instant::now());
            let more = match wakes.recv_timeout(wait) {
                Ok(wake) => merge(wake, wakes)?,
                Err(RecvTimeoutError::Timeout) => return Some(changed),
                Err(RecvTimeoutError::Disconnected) => return None,
            };
            if rules(&more) {
                quiet_from = Instant::now();
            }
            changed = match (changed, more) {
                (Some(mut paths), Some(more)) => {
                    paths.extend(more);
                    Some(paths)
                }
                _ => None,
            };
        }
    }

    fn report(&self, result: Result<()>) {
        if let Err(e) = result {
            (self.on_error)(&e);
        }
    }
}

/// `wake` plus whatever else is queued: `None` to stop, `Some(None)` for a
/// full sync, `Some(Some(paths))` for the changed paths.
fn merge(wake: Wake, wakes: &mpsc::Receiver<Wake>) -> Option<Option<Vec<PathBuf>>> {
    let mut changed = Some(Vec::new());
    for wake in std::iter::once(wake).chain(wakes.try_iter()) {
        match wake {
            Wake::Stop => return None,
            Wake::Rescan => changed = None,
            Wake::Paths(paths) => {
                if let Some(changed) = changed.as_mut() {
                    changed.extend(paths);
                }
            }
        }
    }
    Some(changed)
}

/// An indexable file, the collection's profile, an ignore file, or
/// something that may be a folder (renamed or deleted folders arrive as one
/// event for the folder).
fn is_relevant(folders: &Folders, path: &Path) -> bool {
    let Some(rel) = folders.relative(path) else { return false };
    is_indexable(rel) || changes_the_rules(folders, path) || path.extension().is_none()
}

/// The collection's profile or an ignore file: a change to one may change
/// any document's place in the index, so the whole folder is compared.
/// (The profile is the first folder's `kea.toml`.)
fn changes_the_rules(folders: &Folders, path: &Path) -> bool {
    let profile = folders.primary().and_then(|primary| path.strip_prefix(primary).ok()).is_some_and(|rel| rel == Path::new(crate::profile::PROFILE_FILE));
    profile || folders.relative(path).is_some_and(is_ignore_file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ignore_file_or_the_profile_changes_the_rules_and_an_ignored_path_is_still_synced() {
        let root = &Folders::new(Path::new("/k"), &[]);
        for changed in ["/k/.keaignore", "/k/.gitignore", "/k/sub/deeper/.gitignore", "/k/kea.toml"] {
            assert!(changes_the_rules(root, Path::new(changed)) && is_relevant(root, Path::new(changed)), "{changed}");
        }
        for other in ["/k/a.md", "/k/.git/.gitignore", "/k/sub/kea.toml", "/elsewhere/.keaignore"] {
            assert!(!changes_the_rules(root, Path::new(other)), "{other}");
        }
        // A path an ignore file names still goes to the sync, which drops it from the index.
        assert!(is_relevant(root, Path::new("/k/drafts/wip.md")));
    }
}
