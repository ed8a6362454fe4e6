//! `kea index --watch`: creates, edits, renames and deletes show up in the
//! index within a few seconds, each syncing only the paths it names; the
//! app's Cancel stops a run the watcher started.

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use kea_engine::{Engine, EngineConfig, IndexEvent, SyncReport};
use serde_json::Value;

use super::util::{count, repo_root, Sandbox};

/// A watching `kea` whose JSON summary lines arrive on a channel.
pub(super) struct Watcher {
    child: Child,
    lines: mpsc::Receiver<Value>,
}

impl Watcher {
    pub(super) fn start(sandbox: &Sandbox) -> Watcher {
        let mut child = sandbox.command(&["index", "--watch", "--json"]).stdout(Stdio::piped()).spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Ok(v) = serde_json::from_str::<Value>(&line) {
                    let _ = tx.send(v);
                }
            }
        });
        Watcher { child, lines }
    }

    /// The next summary, if one comes within `wait`.
    pub(super) fn next_within(&self, wait: Duration) -> Option<Value> {
        self.lines.recv_timeout(wait).ok()
    }

    /// The next summary that satisfies `done`, within 10 s.
    pub(super) fn wait_for(&self, what: &str, done: impl Fn(&Value) -> bool) -> Value {
        loop {
            // A bound for a hung watcher, far above what a sync takes on a loaded machine.
            match self.lines.recv_timeout(Duration::from_secs(90)) {
                Ok(v) if done(&v) => return v,
                Ok(_) => continue,
                Err(_) => panic!("timed out waiting for: {what}"),
            }
        }
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn watcher_picks_up_create_edit_rename_and_delete() {
    let sandbox = Sandbox::with_samples();
    let watcher = Watcher::start(&sandbox);
    let initial = watcher.wait_for("the initial sync", |_| true);
    let docs = count(&initial, "documents");
    // Give the watcher a moment to be registered after the initial sync.
    std::thread::sleep(Duration::from_millis(500));

    let note = sandbox.path("kakapo.md");
    std::fs::write(&note, "# Kakapo\n\nThe kakapo is a flightless nocturnal parrot from New Zealand.\n").unwrap();
    watcher.wait_for("the new file", |v| count(v, "documents") == docs + 1);
    assert_eq!(sandbox.search("flightless nocturnal parrot", 1)[0]["source"], "kakapo.md");

    std::fs::write(&note, "# Kakapo\n\nThe kakapo is a flightless nocturnal parrot that smells of honey.\n").unwrap();
    let edit = watcher.wait_for("the edit", |v| count(v, "embedded") >= 1);
    assert_eq!(count(&edit, "documents"), docs + 1);
    assert_eq!(count(&edit, "compared"), 1, "an edit syncs the edited file alone: {edit}");

    std::fs::rename(&note, sandbox.path("owl-parrot.md")).unwrap();
    let rename = watcher.wait_for("the rename", |v| count(v, "removed") == 1);
    assert_eq!(count(&rename, "embedded"), 0, "a rename reuses vectors: {rename}");
    assert_eq!(sandbox.search("flightless nocturnal parrot", 1)[0]["source"], "owl-parrot.md");

    std::fs::remove_file(sandbox.path("owl-parrot.md")).unwrap();
    watcher.wait_for("the delete", |v| count(v, "documents") == docs);
}

#[test]
fn a_small_watcher_storm_settles_with_the_index_equal_to_the_disk() {
    // The smoke size of `kea bench storm` (the full run is 10,000 files in 10 s).
    let sandbox = Sandbox::empty();
    let figures = sandbox.json(&["bench", "storm", "--files", "300", "--seconds", "3", "--json"]);
    assert_eq!(figures["index_equals_disk"], true, "{figures}");
    assert_eq!(figures["query_errors"], 0, "{figures}");
    assert_eq!(figures["watcher_errors"], 0, "{figures}");
    assert!(figures["queries"].as_u64().unwrap() > 10, "queries kept running: {figures}");
    assert!(figures["documents"].as_u64().unwrap() > 200, "{figures}");
}

#[test]
fn cancel_stops_a_run_the_watcher_started_and_the_watcher_goes_on() {
    let sandbox = Sandbox::empty();
    let mut config = EngineConfig::new(&sandbox.knowledge, &sandbox.data);
    config.model_paths.dirs.insert(0, repo_root().join("models"));
    let engine = Arc::new(Engine::open(config).unwrap());
    // Like the app's Cancel button, pressed as soon as the watcher's run starts.
    let (reports, received) = mpsc::channel::<SyncReport>();
    let (pressed, app) = (AtomicBool::new(false), Arc::downgrade(&engine));
    let sink = move |event: &IndexEvent| match event {
        IndexEvent::Started { files_to_index, .. } if *files_to_index > 0 && !pressed.swap(true, Ordering::SeqCst) => {
            app.upgrade().unwrap().indexer().cancel();
        }
        IndexEvent::Finished { report } => reports.send(report.clone()).unwrap(),
        _ => {}
    };
    let handle = kea_engine::watch(engine.clone(), Arc::new(sink), Duration::from_millis(200), |e| panic!("watcher error: {e}")).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    for i in 0..5 {
        std::fs::write(sandbox.path(&format!("note-{i}.md")), format!("# Note {i}\n\nThe {i}th note about cold alpine weather.\n")).unwrap();
    }
    let first = received.recv_timeout(Duration::from_secs(30)).expect("the watcher's run finished");
    assert!(first.cancelled, "{first:?}");
    assert_eq!(first.processed, 0, "{first:?}");

    std::fs::write(sandbox.path("later.md"), "# Later\n\nWritten after the cancel.\n").unwrap();
    // The cancelled notes may be synced in a run of their own first (a busy machine).
    let later_found =
        || engine.retriever().search("Written after the cancel", 1, kea_engine::SearchMode::Fts).unwrap().first().is_some_and(|h| h.chunk.source == "later.md");
    let later = std::iter::from_fn(|| received.recv_timeout(Duration::from_secs(30)).ok()).find(|r| r.documents > 0 && later_found());
    let later = later.expect("the watcher keeps syncing: later.md is searchable");
    assert!(!later.cancelled, "{later:?}");
    handle.stop();
}

/// A quiet app unloads the indexing instance of the embedding model (the
/// watcher asks after `RELEASE_MODEL_AFTER`); the next change loads it again.
#[test]
fn the_indexing_model_is_released_when_idle_and_loads_again_for_a_change() {
    let sandbox = Sandbox::empty();
    std::fs::write(sandbox.path("first.md"), "# First\n\nMacaws crack palm nuts.\n").unwrap();
    let mut config = EngineConfig::new(&sandbox.knowledge, &sandbox.data);
    config.model_paths.dirs.insert(0, repo_root().join("models"));
    let engine = Engine::open(config).unwrap();
    engine.indexer().sync(&(), &kea_engine::CancelToken::new()).unwrap();
    assert!(!engine.release_idle_models(Duration::from_secs(3600)), "just used: kept");
    assert!(engine.release_idle_models(Duration::ZERO), "unused for the time asked: unloaded");
    assert!(!engine.release_idle_models(Duration::ZERO), "nothing left to unload");
    std::fs::write(sandbox.path("second.md"), "# Second\n\nKakapo boom at night.\n").unwrap();
    assert_eq!(engine.indexer().sync(&(), &kea_engine::CancelToken::new()).unwrap().processed, 1);
    assert_eq!(engine.retriever().search("kakapo boom at night", 1, kea_engine::SearchMode::Dense).unwrap()[0].chunk.source, "second.md");
}

/// An idle collection's vectors are mapped from their file instead of held
/// in memory (the watcher asks after `RELEASE_VECTORS_AFTER`); searches
/// rank exactly as before, and a change after a release is indexed and found.
#[test]
fn idle_vectors_are_mapped_searched_as_before_and_loaded_again_for_a_change() {
    let sandbox = Sandbox::with_samples();
    let mut config = EngineConfig::new(&sandbox.knowledge, &sandbox.data);
    config.model_paths.dirs.insert(0, repo_root().join("models"));
    let engine = Engine::open(config).unwrap();
    engine.indexer().sync(&(), &kea_engine::CancelToken::new()).unwrap();
    let questions = ["How long do cockatiels live?", "玄凤鹦鹉吃什么", "Which parrot cannot fly?"];
    let ranked = |engine: &Engine| -> Vec<Vec<i64>> {
        questions.iter().map(|q| engine.retriever().search(q, 5, kea_engine::SearchMode::Dense).unwrap().iter().map(|h| h.chunk.id).collect()).collect()
    };
    let before = ranked(&engine);
    assert!(!engine.release_idle_vectors(Duration::from_secs(3600)), "just searched: kept");
    assert!(engine.release_idle_vectors(Duration::ZERO), "unused for the time asked: released");
    let status = engine.status().unwrap();
    assert!(!status.vectors_loaded && status.vectors == status.chunks, "{} vectors, loaded: {}", status.vectors, status.vectors_loaded);
    assert_eq!(ranked(&engine), before, "searches of the mapped vectors rank as before");
    assert!(!engine.release_idle_vectors(Duration::ZERO), "nothing left to release");

    std::fs::write(sandbox.path("later.md"), "# Later\n\nThe night heron fishes at dusk.\n").unwrap();
    assert_eq!(engine.indexer().sync(&(), &kea_engine::CancelToken::new()).unwrap().processed, 1);
    assert_eq!(engine.retriever().search("night heron fishing at dusk", 1, kea_engine::SearchMode::Dense).unwrap()[0].chunk.source, "later.md");
    assert!(engine.status().unwrap().vectors_loaded, "a change loads them into memory");
    drop(engine);
    let mut config = EngineConfig::new(&sandbox.knowledge, &sandbox.data);
    config.model_paths.dirs.insert(0, repo_root().join("models"));
    assert!(!Engine::open(config).unwrap().status().unwrap().vectors_rebuilt_on_open, "the file a release saved matches the store");
}
